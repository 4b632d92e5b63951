"""`InterruptForm`: the form that answers one interrupt.

A form reads top to bottom as a person answers: the summary (a title, the
question in prose, the model's own words, the arguments as labelled rows,
raw JSON behind a toggle), then the fields, then the buttons. Which buttons
depends on what is known about the tool, and `InterruptForm.actions` is the
one place that decides it (`BUTTONS`, by mode):

* a call held by `ToolApproval` (``hold``): **Approve** / **Approve always**
  (this tool, for the rest of the session: a per-session rule) / **Deny**
  with its reason beside it, and *Edit arguments* to approve a changed call;
* a `define_interrupt` interrupt: a **respond** form from its output schema
  (``respond``), or Approve / Deny when the answer is *approval-shaped* (an
  object whose one required field is the bool ``approved``;
  ``approve-respond``);
* a resumable tool: a **restart** form from its resume type (``restart``) or
  Approve / Deny (``approve-restart``), plus *Edit arguments* and Deny;
* a plain tool that called ``ctx.interrupt()`` (``continue``): **Continue**,
  *Answer instead* (a respond), Deny, *Edit arguments*;
* nothing known (a remote agent, ``json``): JSON text areas to respond or restart.

Every form that lets a tool run offers Deny (a respond the model reads: the
tool does not run), and every form offers **Cancel** (the person abandons the
request: `AgentInterrupt.cancel`, which the model reads as cancelled, not
denied). Editing the arguments turns Approve into "Approve with changes" and
shows what changed. Values are checked with the tool's own
pydantic adapters before anything is sent; an error shows beside its field
and nothing is recorded. Parts are built with the interrupt's builders
(`AgentInterrupt.respond`, ``restart``, ``approve``, `ApprovalHold.deny`),
never by hand. The form only *records* its answer and calls ``on_answer``:
`TurnView` sends all answers together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import ipywidgets as widgets
from pydantic import TypeAdapter, ValidationError

from ..interrupts import AgentInterrupt, ApprovalHold, approval
from ..render import changes, changes_html, error_html, interrupt_summary, summary_html
from ..render._html import esc
from ..render.agents import asked_by_html
from ..tools import Tool
from .answer import Answer, approval_extras, is_approval_shaped, one_text
from .controls import button as make_button
from .controls import labelled
from .controls import toggle as make_toggle
from .countdown import Countdown
from .fields import Field, FieldError, schema_field

__all__ = ["Answer", "InterruptForm", "approval_extras", "is_approval_shaped"]

_OK = "color:var(--jp-success-color0,#2e7d32);font-weight:600"
_REASON = "optional: why (the assistant reads it)"


def _button(label: str, style: str = "") -> Any:
    return make_button(label, style, min_width="7em")


def _reason_box(field: Field) -> None:
    """The reason beside Deny: last in its row, narrowing (never pushing a button to the next line)."""
    box = field.widget
    box.placeholder = field.hint or _REASON  # the schema's description of the reason, if it has one
    box.layout.width = "auto"
    box.layout.flex = "1 1 14em"
    box.layout.min_width = "12em"
    box.layout.max_width = "30em"


class AnswerBox(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """What every form of a turn shares: its answer, and locking and resetting it.

    A subclass builds ``answer``, ``locked``, ``status``, ``error`` and
    ``change_button``, and says how to disable its controls (`set_disabled`).
    """

    answer: Answer | None
    locked: bool

    def set_disabled(self, disabled: bool) -> None:
        raise NotImplementedError

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


class InterruptForm(AnswerBox):
    """The form for one interrupt; records an `Answer` when submitted.

    Args:
        interrupt: The interrupt to answer.
        tool: Its `Tool` when the agent is local (schemas and validators), else None.
        on_answer: Called with the form once it has recorded an answer.
        note: The model's own text that came with the call, shown under the question.
        keeps_rules: Whether the agent keeps per-session rules (it has a store), so
            that a held call's form offers **Approve always**.

    Attributes:
        mode: ``"hold"``, ``"approve-respond"``, ``"respond"``, ``"approve-restart"``,
            ``"restart"``, ``"continue"`` or ``"json"``.
        answer: The recorded `Answer`, or None.
        approve_button, always_button, deny_button, cancel_button, submit_button, continue_button,
        answer_toggle, edit_toggle, change_button: the controls (None when absent).
        reply: The answer's fields; reason: the deny reason beside Deny; inputs: the arguments.

    Example:
        >>> form = InterruptForm(res.interrupts[0], agent.tools["transfer"])  # doctest: +SKIP
        >>> form.approve_button.click(); form.answer.part                     # doctest: +SKIP
    """

    BUTTONS: ClassVar[dict[str, tuple[str, ...]]] = {
        "hold": ("approve", "always", "deny", "cancel", "edit"),
        "approve-respond": ("approve", "deny", "cancel"),
        "approve-restart": ("approve", "deny", "cancel", "edit"),
        "respond": ("submit", "cancel"),
        "restart": ("submit", "deny", "cancel", "edit"),
        "continue": ("continue", "answer", "deny", "cancel", "edit"),
        "json": ("submit", "restart", "deny", "cancel", "edit"),
    }
    """The controls of each mode, in the order they show."""

    def __init__(
        self,
        interrupt: AgentInterrupt,
        tool: Tool | None = None,
        *,
        on_answer: Callable[[InterruptForm], None] | None = None,
        note: str = "",
        keeps_rules: bool = True,
    ) -> None:
        super().__init__()
        self.keeps_rules = keeps_rules
        self.interrupt = interrupt
        self.tool = tool
        self.on_answer = on_answer
        self.answer: Answer | None = None
        self.locked = False
        # a sub-agent's hold is its own claim: its answers are built for the top
        own = interrupt if isinstance(interrupt, ApprovalHold) else None
        self.hold: ApprovalHold | None = own or ApprovalHold.claim(interrupt.part)
        self.mode = self._mode()
        self.summary = interrupt_summary(
            interrupt.part,
            input_schema=tool.input_schema if tool is not None else None,
            description=tool.description if tool is not None else None,
            note=note,
            approval=self.mode in ("hold", "approve-respond", "approve-restart", "continue"),
        )
        self.approve_button: Any = None
        self.always_button: Any = None
        self.deny_button: Any = None
        self.cancel_button: Any = None
        self.submit_button: Any = None
        self.continue_button: Any = None
        self.answer_toggle: Any = None
        self.edit_toggle: Any = None
        self.reply: Field | None = None
        self.reason: Field | None = None
        self.reason_key: str | None = None  # the reply's field shown as the reason beside Deny
        self.inputs: Field | None = None
        # a deadline ticks in the browser (the view applies the default when it is reached)
        deadline = self.summary.expires_at
        self.countdown = Countdown(deadline=deadline, then=self.summary.on_expiry or "") if deadline else None
        self.asked_by = asked_by_html(interrupt.path)  # a sub-agent's question says which agent asks
        self.head = widgets.HTML(
            value=self.asked_by + summary_html(self.summary, deadline=self.countdown is None)
        )
        self.changes = widgets.HTML()
        self.error = widgets.HTML()
        self.status = widgets.HTML()
        self.change_button = _button("Change answer")
        self.change_button.on_click(lambda _: None if self.locked else self.reset())
        self.change_button.layout.display = "none"
        self.add_class("nba-form")
        self.children = [
            self.head,
            *([self.countdown] if self.countdown is not None else []),
            *self._build(),
            self.error,
            widgets.HBox([self.status, self.change_button]),
        ]

    # -- which form, which buttons ---------------------------------------------------------
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

    def actions(self) -> tuple[str, ...]:
        """The controls this form offers, in order: the one place that decides (extend it here).

        Deny is left out only when no denial fits the tool's output schema.
        """
        wanted = self.BUTTONS[self.mode]
        if not self.keeps_rules:  # client-managed state: a per-session rule has nowhere to live
            wanted = tuple(a for a in wanted if a != "always")
        if self.mode in ("hold", "approve-respond", "approve-restart"):
            return wanted  # Deny is the approval's own "no"
        return tuple(a for a in wanted if a != "deny" or self._denial("") is not None)

    def _resume_schema(self) -> dict[str, Any] | None:
        rt = self.tool.resume_type if self.tool is not None else None
        return TypeAdapter(rt).json_schema() if rt is not None else None

    def _reply_schema(self) -> dict[str, Any] | None:
        if self.tool is None:
            return None
        if self.mode in ("respond", "approve-respond", "continue"):
            return self.tool.output_schema
        return self._resume_schema()

    # -- building ------------------------------------------------------------------------------
    def _build(self) -> list[Any]:
        mode, actions = self.mode, self.actions()
        rows: list[Any] = []
        buttons: list[Any] = []
        schema = self._reply_schema()
        if mode in ("hold", "approve-respond", "approve-restart"):
            self.approve_button = _button("Approve", "success")
            self.approve_button.on_click(lambda _: self._record(self._decide, True))
            buttons.append(self.approve_button)
            if "always" in actions:
                self.always_button = _button("Approve always", "success")
                self.always_button.tooltip = (
                    f"Approve, and run '{self.interrupt.name}' without asking for the rest of this session"
                )
                self.always_button.on_click(lambda _: self._record(self._decide, True, True))
                buttons.append(self.always_button)
            if mode == "hold":
                self.reply = self.reason = schema_field({"type": "string"}, label="Reason", required=False)
            else:
                assert schema is not None
                extras = approval_extras(schema)
                self.reply = schema_field(extras)
                one = one_text(extras)
                if one is not None:  # the one text beside Deny is "Reason", as everywhere
                    self.reason = self.reply.children[one]
                    self.reason_key = one
                    labelled(self.reason.widget, "Reason")
                elif extras["properties"]:
                    rows.append(self.reply.widget)
        elif mode in ("respond", "restart", "json"):
            if mode == "json":
                self.reply = schema_field({}, label="Answer", required=False)
            else:
                fields = isinstance(schema, dict) and bool(schema.get("properties"))
                self.reply = schema_field(
                    schema if schema is not None else {}, label="" if fields else "Answer *"
                )
            rows.append(self.reply.row)
            self.submit_button = _button("Send answer", "primary")
            self.submit_button.on_click(lambda _: self._record(self._submit))
            buttons.append(self.submit_button)
            if "restart" in actions:
                self.continue_button = _button("Restart")
                self.continue_button.on_click(lambda _: self._record(self._continue))
                buttons.append(self.continue_button)
        else:  # continue: a plain tool that paused itself
            self.continue_button = _button("Continue", "success")
            self.continue_button.on_click(lambda _: self._record(self._continue))
            buttons.append(self.continue_button)
            self.answer_toggle = make_toggle("Answer instead")
            self.reply = schema_field(schema or {}, label="" if schema else "Output")
            self.submit_button = _button("Send answer", "primary")
            self.submit_button.on_click(lambda _: self._record(self._submit))
            answer_box = widgets.VBox([self.reply.row, self.submit_button])
            _reveal(self.answer_toggle, answer_box)
            rows.append(answer_box)
        if self.answer_toggle is not None:
            buttons.append(self.answer_toggle)
        if "edit" in actions:
            tool = self.tool
            self.inputs = schema_field(
                tool.input_schema if tool is not None else {},
                self.interrupt.input,
                label="" if tool else "Arguments",
            )
            self.inputs.observe(self._show_changes)
            self.edit_toggle = make_toggle("Edit arguments")
            self.edit_toggle.observe(lambda _change: self._show_changes(), names="value")
            edit_box = widgets.VBox([self.inputs.row, self.changes])
            edit_box.layout.margin = "4px 0"
            _reveal(self.edit_toggle, edit_box)
            rows.append(edit_box)
            buttons.append(self.edit_toggle)
        if "cancel" in actions:  # the person abandons the request: nothing runs, the model is told
            self.cancel_button = _button("Cancel")
            self.cancel_button.tooltip = (
                "Cancel this request: the tool does not run, and the assistant is told"
            )
            self.cancel_button.on_click(lambda _: self._record(self._cancel))
            buttons.append(self.cancel_button)
        if "deny" in actions:  # last: Deny and its reason, which narrows before anything wraps
            if self.reason is None:
                self.reason = schema_field({"type": "string"}, label="Reason", required=False)
            _reason_box(self.reason)
            self.deny_button = _button("Deny", "danger")
            self.deny_button.on_click(lambda _: self._record(self._deny))
            buttons += [self.deny_button, self.reason.widget]
        return [
            *rows,
            widgets.HBox(buttons, layout=widgets.Layout(flex_flow="row wrap", align_items="center")),
        ]

    # -- reading and checking values ---------------------------------------------------------
    def _read(self, field: Field | None) -> Any:
        return field.get() if field is not None else None

    def _check(self, what: str, fn: Callable[[Any], Any] | None, value: Any, field: Field | None) -> None:
        if fn is None:
            return
        try:
            fn(value)
        except ValidationError as exc:
            for err in exc.errors():
                if field is not None:
                    field.find(tuple(err["loc"])).show_error(err["msg"])
            raise FieldError(f"{what} for '{self.interrupt.name}' is not valid: {_errors(exc)}") from exc

    def _edited(self) -> Any:
        """The edited input, or None when it is not being edited (or unchanged)."""
        if self.edit_toggle is None or not self.edit_toggle.value or self.inputs is None:
            return None
        value = self._read(self.inputs)
        self._check("The new input", self.tool.parse_input if self.tool else None, value, self.inputs)
        return None if value == self.interrupt.input else value

    def _changed(self, new: Any) -> tuple[tuple[str, Any, Any], ...]:
        schema = self.tool.input_schema if self.tool is not None else None
        return tuple(changes(self.interrupt.input, new, schema)) if new is not None else ()

    def _show_changes(self) -> None:
        """Relabel the run button and show the diff while the arguments differ."""
        try:
            new = self._edited() if self.edit_toggle is not None and self.edit_toggle.value else None
        except FieldError:
            new = None
        rows = self._changed(new)
        self.changes.value = changes_html(list(rows))
        suffix = " with changes" if rows else ""
        pairs = (
            (self.approve_button, "Approve"),
            (self.always_button, "Approve always"),
            (self.continue_button, "Continue"),
        )
        for button, base in pairs:
            if button is not None and (button is not self.continue_button or self.mode == "continue"):
                button.description = base + suffix
                button.tooltip = button.description

    # -- actions -----------------------------------------------------------------------------
    def _decide(self, approved: bool, always: bool = False) -> Answer:
        i, tool = self.interrupt, self.tool
        if self.hold is not None and approved:
            new = self._edited()
            if new is not None:
                part = i.restart(approval(always), new)
            else:
                part = self.hold.approve(always=always)
            label = "approved with changes" if new is not None else "approved"
            if always:
                label += f" · '{i.name}' is approved for the rest of this session"
            return Answer("restart", part, label, "approved", self._changed(new))
        if self.hold is not None:
            reason = self._read(self.reason)
            msg = f"The user denied the call to '{i.name}': {reason}" if reason else None
            return Answer("respond", self.hold.deny({"error": msg} if msg else None), "denied", "denied")
        value = {**(self._read(self.reply) or {}), "approved": approved}
        verb = "approved" if approved else "denied"
        if self.mode == "approve-respond":
            self._check("The answer", tool.check_output if tool else None, value, self.reply)
            return Answer("respond", i.respond(value), verb, verb)
        self._check("The reply", tool.check_resume if tool else None, value, self.reply)
        new = self._edited() if approved else None
        label = verb + (" with changes" if new is not None else "")
        return Answer("restart", i.restart(value, new), label, verb, self._changed(new))

    def _denial(self, reason: str) -> Any:
        """The respond output that tells the model the call was denied; None if none fits."""
        msg = f"The user denied the call to '{self.interrupt.name}'" + (f": {reason}" if reason else ".")
        candidates: list[Any] = [{"error": msg}, msg]
        check = self.tool.check_output if self.tool is not None else None
        for output in candidates:
            try:
                if check is not None:
                    check(output)
                return output
            except ValidationError:
                continue
        return None

    def _deny(self) -> Answer:
        if self.mode in ("hold", "approve-respond", "approve-restart"):
            return self._decide(False)
        reason = self._read(self.reason) or ""
        return Answer("respond", self.interrupt.respond(self._denial(str(reason))), "denied", "denied")

    def _cancel(self) -> Answer:
        reason = self._read(self.reason) if self.reason is not None else None
        part = self.interrupt.cancel(str(reason) if reason else None)
        return Answer("respond", part, "cancelled", "cancelled")

    def _submit(self) -> Answer:
        value = self._read(self.reply)
        tool = self.tool
        if self.mode == "restart":
            self._check("The reply", tool.check_resume if tool else None, value, self.reply)
            new = self._edited()
            part = self.interrupt.restart(value, new)
            return Answer(
                "restart", part, "sent" + (" with changes" if new else ""), "answered", self._changed(new)
            )
        if value is None and self.mode == "json":
            raise FieldError("enter the answer as JSON, or use Restart")
        self._check("The answer", tool.check_output if tool else None, value, self.reply)
        return Answer("respond", self.interrupt.respond(value), "answered", "answered")

    def _continue(self) -> Answer:
        resumed = self._read(self.reply) if self.mode == "json" else None
        new = self._edited()
        part = self.interrupt.restart(resumed if resumed is not None else True, new)
        label = "continued" + (" with changes" if new is not None else "")
        return Answer("restart", part, label, "approved", self._changed(new))

    def _record(self, action: Callable[..., Answer], *args: Any) -> None:
        if self.answer is not None or self.locked:
            return  # a stale click: this form has already answered
        try:
            answer = action(*args)
        except FieldError as exc:
            self.error.value = error_html(None, exc.message)
            return
        if answer.part.tool_request is not None:  # a sub-agent's answer of any kind restarts the top call
            answer = answer._replace(kind="restart")
        self.error.value = ""
        self.answer = answer
        self.set_disabled(True)
        self.head.value = summary_html(self.summary, state=answer.verb, deadline=False)
        self.status.value = f'<span style="{_OK}">{esc(answer.label[:1].upper() + answer.label[1:])}</span>'
        self.change_button.layout.display = None
        if self.on_answer is not None:
            self.on_answer(self)

    # -- state ---------------------------------------------------------------------------------
    def reset(self, error: str | None = None) -> None:
        """Forget the answer and enable the form again (its question waits again)."""
        super().reset(error)
        self.head.value = self.asked_by + summary_html(self.summary, deadline=self.countdown is None)

    def set_disabled(self, disabled: bool) -> None:
        """Disable or enable every control of the form."""
        controls = (
            self.approve_button, self.always_button, self.deny_button, self.cancel_button, self.submit_button,
        )  # fmt: skip
        for button in (*controls, self.continue_button):
            if button is not None:
                button.disabled = disabled
        for toggle in (self.answer_toggle, self.edit_toggle):
            if toggle is not None:
                toggle.disabled = disabled
        for field in (self.reply, self.reason, self.inputs):
            if field is not None:
                field.set_disabled(disabled)

    def __repr__(self) -> str:
        return f"InterruptForm({self.interrupt.name!r}, mode={self.mode!r}, answer={self.answer!r})"


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors())


def _reveal(toggle: Any, box: Any) -> None:
    """Show `box` only while `toggle` is down."""
    box.layout.display = "none"

    def flip(change: dict[str, Any]) -> None:
        box.layout.display = None if change["new"] else "none"

    toggle.observe(flip, names="value")
