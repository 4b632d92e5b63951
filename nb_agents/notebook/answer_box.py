"""What every answer form shares (`AnswerBox`), and the small controls the forms build.

`AnswerBox` holds a form's answer and locks, unlocks and resets it; its
subclasses are `InterruptForm` (a paused call) and `ElicitationForm` (an MCP
server's question). The helpers make the forms' buttons, the reason field
beside Deny, and sections a toggle reveals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
from pydantic import ValidationError

from ..interrupts import AgentInterrupt
from ..render import error_html
from ..stores.base import AuditRecord
from ..tools import Tool
from .answer import Answer
from .controls import REASON_HINT
from .controls import button as make_button
from .fields import Field

__all__ = ["AnswerBox", "errors_text", "form_button", "reason_box", "reveal"]


def form_button(label: str, style: str = "") -> Any:
    return make_button(label, style, min_width="7em")


def reason_box(field: Field) -> None:
    """The reason beside Deny, last in its row: where the row has no room for its placeholder
    to read whole, it moves to a line of its own (it never pushes a button to the next line)."""
    box = field.widget
    box.placeholder = field.hint or REASON_HINT  # the schema's description of the reason, if it has one
    # the label (5em), and the placeholder at about half an em a character (a very long hint is cut)
    room = min(6 + len(box.placeholder) // 2, 40)
    box.layout.width = "auto"
    box.layout.flex = f"1 1 {room}em"
    box.layout.min_width = f"{room}em"
    box.layout.max_width = f"{max(room, 30)}em"


class AnswerBox(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """What every form of a turn shares: what it answers, its answer, and locking and resetting it.

    A subclass builds ``status``, ``error`` and ``change_button``, and says how
    to disable its controls (`set_disabled`).
    """

    def __init__(
        self, interrupt: AgentInterrupt, tool: Tool | None, on_answer: Callable[[Any], None] | None
    ) -> None:
        super().__init__()
        self.interrupt = interrupt
        self.tool = tool
        self.on_answer = on_answer  # called with the form once it has recorded an answer
        self.answer: Answer | None = None
        self.locked = False
        # the audit's record of the answer another cell, tab or person gave this call first
        self.elsewhere: AuditRecord | None = None

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


def errors_text(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors())


def reveal(toggle: Any, box: Any) -> None:
    """Show `box` only while `toggle` is down."""
    box.layout.display = "none"

    def flip(change: dict[str, Any]) -> None:
        box.layout.display = None if change["new"] else "none"

    toggle.observe(flip, names="value")
