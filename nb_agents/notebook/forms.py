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

from ..interrupts import AgentInterrupt, ApprovalHold
from ..render import changes, changes_html, error_html, interrupt_summary, summary_html
from ..render._html import esc
from ..render.agents import asked_by_html
from ..tools import Tool
from .actions import FormActions
from .answer import Answer, approval_extras, is_approval_shaped, one_text
from .answer_box import AnswerBox, errors_text, form_button, reason_box, reveal
from .controls import labelled
from .controls import toggle as make_toggle
from .countdown import Countdown
from .fields import Field, FieldError, schema_field

__all__ = ["Answer", "InterruptForm", "approval_extras", "is_approval_shaped"]

_OK = "color:var(--jp-success-color0,#2e7d32);font-weight:600"


class InterruptForm(FormActions, AnswerBox):
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
        super().__init__(interrupt, tool, on_answer)
        self.keeps_rules = keeps_rules
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
        self.change_button = form_button("Change answer")
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
            self.approve_button = form_button("Approve", "success")
            self.approve_button.on_click(lambda _: self._record(self._decide, True))
            buttons.append(self.approve_button)
            if "always" in actions:
                self.always_button = form_button("Approve always", "success")
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
            self.submit_button = form_button("Send answer", "primary")
            self.submit_button.on_click(lambda _: self._record(self._submit))
            buttons.append(self.submit_button)
            if "restart" in actions:
                self.continue_button = form_button("Restart")
                self.continue_button.on_click(lambda _: self._record(self._continue))
                buttons.append(self.continue_button)
        else:  # continue: a plain tool that paused itself
            self.continue_button = form_button("Continue", "success")
            self.continue_button.on_click(lambda _: self._record(self._continue))
            buttons.append(self.continue_button)
            self.answer_toggle = make_toggle("Answer instead")
            self.reply = schema_field(schema or {}, label="" if schema else "Output")
            self.submit_button = form_button("Send answer", "primary")
            self.submit_button.on_click(lambda _: self._record(self._submit))
            answer_box = widgets.VBox([self.reply.row, self.submit_button])
            reveal(self.answer_toggle, answer_box)
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
            reveal(self.edit_toggle, edit_box)
            rows.append(edit_box)
            buttons.append(self.edit_toggle)
        if "cancel" in actions:  # the person abandons the request: nothing runs, the model is told
            self.cancel_button = form_button("Cancel")
            self.cancel_button.tooltip = (
                "Cancel this request: the tool does not run, and the assistant is told"
            )
            self.cancel_button.on_click(lambda _: self._record(self._cancel))
            buttons.append(self.cancel_button)
        if "deny" in actions:  # last: Deny and its reason, which narrows before anything wraps
            if self.reason is None:
                self.reason = schema_field({"type": "string"}, label="Reason", required=False)
            reason_box(self.reason)
            self.deny_button = form_button("Deny", "danger")
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
            raise FieldError(f"{what} for '{self.interrupt.name}' is not valid: {errors_text(exc)}") from exc

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
