"""How a `TurnView` settles: once nothing is left to answer, its forms give way to a record.

The record (the question, the answer, who, when, the reply) is what the cell
keeps, so a saved notebook reads without a kernel. A mixin of `TurnView`,
which holds the forms, the status line and the child view these read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import ipywidgets as widgets

from .._sync import start as spawn
from ..render import record_words
from ..stores.base import AuditRecord
from ._bundle import OUTPUT_METADATA
from .catching_up import move_chat
from .forking import ForkPanel, can_fork
from .partial import status as _status
from .records import record_body_html, turn_record_bundle

if TYPE_CHECKING:
    from .view import TurnView

__all__ = ["Settling"]


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no loop running in this thread
        return None


class Settling:
    """Settling and the record of a `TurnView` (a mixin; the view holds what these read)."""

    state: str
    outcome: str
    chat: Any
    response: Any
    moves_chat: bool
    following: asyncio.Task[None] | None
    child: Any
    forms: list[Any]
    prior: list[AuditRecord]
    you: bool
    answered_by: str | None
    displayed: bool
    try_another: bool | None
    fork_panel: ForkPanel | None
    deadline_task: asyncio.Task[None] | None
    on_settle: Callable[[Any], None] | None
    header: widgets.HTML
    status: widgets.HTML
    retry_button: widgets.Button
    children: Any
    show_record: Callable[[], None]
    _repr_mimebundle_: Callable[..., Any]

    @property
    def _view(self) -> TurnView:
        return cast("TurnView", self)

    def _mark_stale(self) -> None:
        """Collapse to "Already answered (...)": the answer recorded first, not this form's."""
        you = self.answered_by if self.you else None
        words = "; ".join(
            f"{r.name}: {record_words(r, you=you)}" if len(self.prior) > 1 else record_words(r, you=you)
            for r in self.prior
        )
        self.state = "stale"
        self.outcome = f"Already answered ({words})" if words else "Already answered elsewhere"
        self.header.value = _status("muted", "answered", self.outcome)
        self.status.value = ""
        for form in self.forms:
            form.lock()
            form.status.value = ""
        if self.moves_chat and self.chat is not None and self.chat.snapshot_id == self.response.snapshot_id:
            self.following = spawn(move_chat(self))  # the chat goes on from the answer that went first
        self._settle()  # nothing more will come: the forms give way to their questions

    # -- settling ---------------------------------------------------------------------------
    @property
    def offers_forks(self) -> bool:
        """Whether a finished turn offers "Try another answer" (see ``try_another``)."""
        return self.try_another if self.try_another is not None else not self.displayed

    @property
    def settled(self) -> bool:
        """Whether nothing is left to answer here or below."""
        return self.state in ("done", "stale") or (self.child is not None and self.child.settled)

    def _settle(self) -> None:
        if self.state not in ("stale",):
            self.state = "done" if self.child is None or self.child.settled else self.state
        if not self.settled:
            return
        here = self.child is None or self.child.settled
        if (
            here
            and self.state == "done"
            and self.fork_panel is None
            and self.offers_forks
            and can_fork(self._view)
        ):
            self.fork_panel = ForkPanel(self._view)
        # the cell's record first, before the live view says it is done: a notebook saved
        # from the moment it does keeps the record (a live fork panel: only with the extension)
        if self.displayed and self.fork_panel is not None:
            self.refresh_record()  # it stays live: another answer can be tried
        elif self.displayed:
            self.show_record()
        if here:
            self.show_settled()
            if self.deadline_task is not None and self.deadline_task is not _current_task():
                self.deadline_task.cancel()  # settled: nothing to expire
        if self.on_settle is not None:
            self.on_settle(self)

    def show_settled(self) -> None:
        """Show the settled turn as its record (what the cell keeps), under its status line."""
        expired = any(getattr(f, "expired", None) is not None for f in self.forms)
        tone = "muted" if self.state == "stale" else "no" if expired else "ok"
        word = "answered" if self.state == "stale" else "expired" if expired else "done"
        self.header.value = _status(tone, word, self.outcome) if self.outcome else ""
        panel = [self.fork_panel] if self.fork_panel is not None else []
        self.children = [self.header, widgets.HTML(value=record_body_html(self._view)), *panel]
        self.retry_button.layout.display = "none"

    # -- display ---------------------------------------------------------------------------
    def record_html(self) -> str:
        """This turn as a record: status line, questions and answers, the reply (and what followed)."""
        return turn_record_bundle(self._view)["text/html"]

    def _static_bundle(self) -> dict[str, Any]:
        return turn_record_bundle(self._view)

    def refresh_record(self) -> None:
        """Update the record in this view's cell output (what a saved notebook shows), keeping the widget."""
        for handle in self.__dict__.get("_nba_handles", []):
            handle.update(self._repr_mimebundle_(), raw=True, metadata=OUTPUT_METADATA)
