"""`InterruptForm`: the form that answers one interrupt.

Which form an interrupt gets depends on what is known about its tool:

* a call held by `ToolApproval`: **Approve** / **Deny** (with an optional
  reason), and *Edit arguments* to approve a changed call;
* a `define_interrupt` interrupt: a **respond** form from its output schema,
  or Approve / Deny when the answer is *approval-shaped* (an object whose
  one required field is the bool ``approved``; its optional fields stay in
  the form);
* a resumable tool: a **restart** form from its resume type (or Approve /
  Deny), plus *Edit arguments*;
* a plain tool that called ``ctx.interrupt()``: **Continue** (restart with
  ``resumed=True``), *Edit arguments*, or *Answer instead* (a respond);
* nothing known (a remote agent): JSON text areas to respond or restart.

Values are checked with the tool's own pydantic adapters before anything is
sent; a bad value is shown in the form and nothing is recorded. Parts are
built with the interrupt's builders (`AgentInterrupt.respond`, ``restart``,
``approve``, `ApprovalHold.deny`), never by hand. The form only *records*
its answer and calls ``on_answer``: `TurnView` sends all answers together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import ipywidgets as widgets
from pydantic import TypeAdapter, ValidationError

from ..interrupts import AgentInterrupt, ApprovalHold
from ..render import error_html, interrupt_html
from ..tools import Tool
from ..types import Part
from .fields import Field, FieldError, schema_field

__all__ = ["Answer", "InterruptForm", "approval_extras", "is_approval_shaped"]

_OK = "color:var(--jp-success-color1,#2e7d32)"


class Answer(NamedTuple):
    """A recorded answer: which list the part goes in, the part, a label."""

    kind: Literal["respond", "restart"]
    part: Part
    label: str


def is_approval_shaped(schema: Any) -> bool:
    """True for an object schema whose only required field is the bool ``approved``.

    Example:
        >>> is_approval_shaped({"type": "object", "required": ["approved"],
        ...     "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}}})
        True
    """
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    props = schema.get("properties") or {}
    return schema.get("required") == ["approved"] and props.get("approved", {}).get("type") == "boolean"


def approval_extras(schema: dict[str, Any]) -> dict[str, Any]:
    """The approval-shaped schema without ``approved``: the optional fields."""
    props = {k: v for k, v in schema.get("properties", {}).items() if k != "approved"}
    return {**schema, "properties": props, "required": []}


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors())


def _button(label: str, style: str = "") -> Any:
    return widgets.Button(description=label, button_style=style)


class InterruptForm(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """The form for one interrupt; records an `Answer` when submitted.

    Args:
        interrupt: The interrupt to answer.
        tool: Its `Tool` when the agent is local (schemas and validators), else None.
        on_answer: Called with the form once it has recorded an answer.

    Attributes:
        mode: ``"hold"``, ``"approve-respond"``, ``"respond"``, ``"approve-restart"``,
            ``"restart"``, ``"continue"`` or ``"json"``.
        answer: The recorded `Answer`, or None.
        approve_button, deny_button, submit_button, continue_button,
        answer_toggle, edit_toggle, change_button: the controls (None when absent).

    Example:
        >>> form = InterruptForm(res.interrupts[0], agent.tools["transfer"])  # doctest: +SKIP
        >>> form.approve_button.click(); form.answer.part                     # doctest: +SKIP
    """

    def __init__(
        self,
        interrupt: AgentInterrupt,
        tool: Tool | None = None,
        *,
        on_answer: Callable[[InterruptForm], None] | None = None,
    ) -> None:
        super().__init__()
        self.interrupt = interrupt
        self.tool = tool
        self.on_answer = on_answer
        self.answer: Answer | None = None
        self.locked = False
        self.hold: ApprovalHold | None = ApprovalHold.claim(interrupt.part)
        self.approve_button: Any = None
        self.deny_button: Any = None
        self.submit_button: Any = None
        self.continue_button: Any = None
        self.answer_toggle: Any = None
        self.edit_toggle: Any = None
        self.reply: Field | None = None
        self.inputs: Field | None = None
        self.error = widgets.HTML()
        self.status = widgets.HTML()
        self.change_button = _button("Change answer")
        self.change_button.on_click(lambda _: None if self.locked else self.reset())
        self.change_button.layout.display = "none"
        self.mode = self._mode()
        self.children = [widgets.HTML(value=interrupt_html(interrupt.part)), *self._build()]

    # -- which form --------------------------------------------------------------------
    def _mode(self) -> str:
        tool = self.tool
        if self.hold is not None:
            return "hold"
        if tool is None:
            return "json"
        if tool.kind == "interrupt":
            return "approve-respond" if is_approval_shaped(tool.output_schema) else "respond"
        if tool.kind == "resumable":
            return "approve-restart" if is_approval_shaped(self._resume_schema()) else "restart"
        return "continue"

    def _resume_schema(self) -> dict[str, Any] | None:
        rt = self.tool.resume_type if self.tool is not None else None
        return TypeAdapter(rt).json_schema() if rt is not None else None

    def _build(self) -> list[Any]:
        mode, tool, rows = self.mode, self.tool, []
        if mode in ("hold", "approve-respond", "approve-restart"):
            self.approve_button = _button("Approve", "success")
            self.deny_button = _button("Deny", "danger")
            self.approve_button.on_click(lambda _: self._record(self._decide, True))
            self.deny_button.on_click(lambda _: self._record(self._decide, False))
            if mode == "hold":
                reason = {"type": "string", "description": "why (shown to the model)"}
                self.reply = schema_field(reason, label="Reason for denying", required=False)
            else:
                schema = tool.output_schema if mode == "approve-respond" else self._resume_schema()  # type: ignore[union-attr]
                assert schema is not None
                self.reply = schema_field(approval_extras(schema))
            rows += [self.reply.widget, widgets.HBox([self.approve_button, self.deny_button])]
        elif mode in ("respond", "restart", "json"):
            if mode == "json":
                self.reply = schema_field({}, label="answer", required=False)
            else:
                schema = tool.output_schema if mode == "respond" else self._resume_schema()  # type: ignore[union-attr]
                self.reply = schema_field(
                    schema if schema is not None else {}, label="" if schema else "answer"
                )
            self.submit_button = _button("Submit" if mode != "json" else "Respond", "primary")
            self.submit_button.on_click(lambda _: self._record(self._submit))
            buttons = [self.submit_button]
            if mode == "json":
                self.continue_button = _button("Restart")
                self.continue_button.on_click(lambda _: self._record(self._continue))
                buttons.append(self.continue_button)
            rows += [self.reply.widget, widgets.HBox(buttons)]
        else:  # continue: a plain tool that paused itself
            self.continue_button = _button("Continue", "success")
            self.continue_button.on_click(lambda _: self._record(self._continue))
            self.answer_toggle = widgets.ToggleButton(description="Answer instead")
            out_schema = tool.output_schema if tool is not None else None
            self.reply = schema_field(out_schema or {}, label="" if out_schema else "output")
            self.submit_button = _button("Send answer", "primary")
            self.submit_button.on_click(lambda _: self._record(self._submit))
            answer_box = widgets.VBox([self.reply.widget, self.submit_button])
            _reveal(self.answer_toggle, answer_box)
            rows += [widgets.HBox([self.continue_button, self.answer_toggle]), answer_box]
        if mode in ("hold", "approve-restart", "restart", "continue", "json"):
            schema = tool.input_schema if tool is not None else {}
            self.inputs = schema_field(schema, self.interrupt.input, label="" if tool else "input")
            self.edit_toggle = widgets.ToggleButton(description="Edit arguments")
            edit_box = widgets.VBox([self.inputs.widget])
            _reveal(self.edit_toggle, edit_box)
            rows += [self.edit_toggle, edit_box]
        return [*rows, self.error, self.status, self.change_button]

    # -- reading and checking values ---------------------------------------------------------
    def _read(self, field: Field | None) -> Any:
        return field.get() if field is not None else None

    def _check(self, what: str, fn: Callable[[Any], Any] | None, value: Any) -> None:
        if fn is not None:
            try:
                fn(value)
            except ValidationError as exc:
                raise FieldError(f"{what} for '{self.interrupt.name}' is not valid: {_errors(exc)}") from exc

    def _new_input(self) -> Any:
        """The edited input, or None when it is not being edited (or unchanged)."""
        if self.edit_toggle is None or not self.edit_toggle.value or self.inputs is None:
            return None
        value = self._read(self.inputs)
        self._check("The new input", self.tool.parse_input if self.tool else None, value)
        return None if value == self.interrupt.input else value

    # -- actions -----------------------------------------------------------------------------
    def _decide(self, approved: bool) -> Answer:
        i, tool = self.interrupt, self.tool
        if self.hold is not None:
            if approved:
                new = self._new_input()
                part = i.restart({"toolApproved": True}, new) if new is not None else self.hold.approve()
                return Answer("restart", part, "approved" + (" with edited arguments" if new else ""))
            reason = self._read(self.reply)
            msg = f"The user denied the call to '{i.name}': {reason}" if reason else None
            return Answer("respond", self.hold.deny({"error": msg} if msg else None), "denied")
        value = {**(self._read(self.reply) or {}), "approved": approved}
        label = "approved" if approved else "denied"
        if self.mode == "approve-respond":
            self._check("The answer", tool.check_output if tool else None, value)
            return Answer("respond", i.respond(value), label)
        self._check("The reply", tool.check_resume if tool else None, value)
        new = self._new_input()
        return Answer("restart", i.restart(value, new), label + (" with edited arguments" if new else ""))

    def _submit(self) -> Answer:
        value = self._read(self.reply)
        tool = self.tool
        if self.mode == "restart":
            self._check("The reply", tool.check_resume if tool else None, value)
            new = self._new_input()
            return Answer("restart", self.interrupt.restart(value, new), "restarted with your reply")
        if value is None and self.mode == "json":
            raise FieldError("enter the answer as JSON, or use Restart")
        self._check("The answer", tool.check_output if tool else None, value)
        return Answer("respond", self.interrupt.respond(value), "answered")

    def _continue(self) -> Answer:
        resumed = self._read(self.reply) if self.mode == "json" else None
        new = self._new_input()
        part = self.interrupt.restart(resumed if resumed is not None else True, new)
        return Answer("restart", part, "continued" + (" with edited arguments" if new else ""))

    def _record(self, action: Callable[..., Answer], *args: Any) -> None:
        if self.answer is not None or self.locked:
            return  # a stale click: this form has already answered
        try:
            answer = action(*args)
        except FieldError as exc:
            self.error.value = error_html(None, str(exc))
            return
        self.error.value = ""
        self.answer = answer
        self.set_disabled(True)
        self.status.value = f'<span style="{_OK}">✓ {answer.label}</span>'
        self.change_button.layout.display = None
        if self.on_answer is not None:
            self.on_answer(self)

    # -- state ---------------------------------------------------------------------------------
    def set_disabled(self, disabled: bool) -> None:
        """Disable or enable every control of the form."""
        for button in (self.approve_button, self.deny_button, self.submit_button, self.continue_button):
            if button is not None:
                button.disabled = disabled
        for toggle in (self.answer_toggle, self.edit_toggle):
            if toggle is not None:
                toggle.disabled = disabled
        for field in (self.reply, self.inputs):
            if field is not None:
                field.set_disabled(disabled)

    def lock(self) -> None:
        """Freeze the form while its answer is being sent."""
        self.locked = True
        self.set_disabled(True)
        self.change_button.layout.display = "none"

    def reset(self, error: str | None = None) -> None:
        """Forget the answer and enable the form again (field values are kept)."""
        self.answer = None
        self.locked = False
        self.set_disabled(False)
        self.status.value = ""
        self.change_button.layout.display = "none"
        self.error.value = error_html(None, error) if error else ""

    def __repr__(self) -> str:
        return f"InterruptForm({self.interrupt.name!r}, mode={self.mode!r}, answer={self.answer!r})"


def _reveal(toggle: Any, box: Any) -> None:
    """Show `box` only while `toggle` is down."""
    box.layout.display = "none"

    def flip(change: dict[str, Any]) -> None:
        box.layout.display = None if change["new"] else "none"

    toggle.observe(flip, names="value")
