"""What each button of an `InterruptForm` answers: approve, deny, cancel, submit, continue.

Each action reads the form's fields and builds the `Answer` (the part that goes
into ``resume``, and its words); `InterruptForm._record` keeps it. A mixin of
`InterruptForm`, which has the fields and the interrupt these read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ..interrupts import AgentInterrupt, ApprovalHold, approval
from ..tools import Tool
from .answer import Answer
from .fields import Field, FieldError

__all__ = ["FormActions"]


class FormActions:
    """The answers an `InterruptForm`'s buttons build (a mixin; the form holds what they read)."""

    interrupt: AgentInterrupt
    tool: Tool | None
    hold: ApprovalHold | None
    mode: str
    reason: Field | None
    reply: Field | None
    _read: Callable[[Field | None], Any]
    _check: Callable[[str, Callable[[Any], Any] | None, Any, Field | None], None]
    _edited: Callable[[], Any]
    _changed: Callable[[Any], tuple[tuple[str, Any, Any], ...]]

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
