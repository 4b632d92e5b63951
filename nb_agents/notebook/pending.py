"""`pending(agent)`: every paused turn in the store, redrawn as forms.

After a kernel restart the forms of a paused turn are gone, but the turn is
not: with a persistent store (SQLite, file) ``agent.pending()`` still lists
it. `pending` draws a `TurnView` for each, each on a chat positioned at its
paused snapshot, so answering resumes the turn where it stopped. The header
counts what still waits and refreshes itself after every answer (turns paused
since then join the listing). A form left over from before (a stale one)
cannot run a tool twice: the store's exactly-once resume returns the first
result for the same answer and rejects a different one, and the form
collapses to "Already answered (...)".
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets

from .._sync import start as spawn
from ..agent import Agent
from ..errors import NbAgentsError
from ..listings import PendingTurn
from ..render import error_html, pending_bundle
from ..render._html import BOX, esc
from ..responses import AgentResponse
from ..types import AgentOutput
from ._bundle import WithStaticFallback
from ._reading import FirstRead
from .controls import button
from .view import TurnView

__all__ = ["PendingView", "apending", "pending"]


def turn_response(turn: PendingTurn) -> AgentResponse:
    """The paused turn as a response whose chat is positioned to resume it."""
    out = AgentOutput(
        session_id=turn.session_id,
        snapshot_id=turn.snapshot_id,
        message=turn.message,
        finish_reason="interrupted",
    )
    return AgentResponse(out, chat=turn.chat())


class PendingView(FirstRead, WithStaticFallback, widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """The paused turns of an agent, each as a `TurnView`.

    Args:
        agent: The agent whose store is read.
        turns: The paused turns, or None to read them later (`refresh`).
        answered_by: Who answers, recorded in the audit trail.

    Attributes:
        turns: The `PendingTurn` values shown.
        views: One `TurnView` per turn.
        task: The read in progress when drawn from a running loop; await it.
    """

    def __init__(
        self, agent: Agent, turns: Sequence[PendingTurn] | None = None, *, answered_by: str | None = None
    ):
        super().__init__()
        self.agent = agent
        self.answered_by = answered_by
        self.turns: list[PendingTurn] = []
        self.views: list[TurnView] = []
        self.task: asyncio.Task[None] | None = None
        self.header = widgets.HTML(value="<i>reading paused turns…</i>")
        self.refresh_button = button("Refresh")
        self.refresh_button.on_click(lambda _: self._refresh_soon())
        self.children = [widgets.HBox([self.header, self.refresh_button])]
        if turns is not None:
            self.show(turns)

    def show(self, turns: Sequence[PendingTurn]) -> None:
        """Draw a form for every waiting interrupt of `turns`."""
        self.turns = list(turns)
        self.views = [self._view(t) for t in self.turns]
        self._draw()

    def _view(self, turn: PendingTurn) -> TurnView:
        # its chat is this list's own, positioned at the pause: nobody sends on it, so it stays there
        return TurnView(
            turn_response(turn), answered_by=self.answered_by, on_settle=self._on_settle, moves_chat=False
        )

    def _draw(self) -> None:
        self.header.value = f"<b>{esc(self.headline())}</b>"
        self.children = [widgets.HBox([self.header, self.refresh_button]), *self.views]

    def headline(self) -> str:
        """What the header says: how many turns wait, how many were answered here."""
        waiting = sum(not v.settled for v in self.views)
        answered = len(self.views) - waiting
        if not self.views:
            return "0 paused turns waiting for an answer"
        head = f"{waiting} paused turn{'s' if waiting != 1 else ''} waiting for an answer"
        return head + (f" · {answered} answered here" if answered else "")

    def _on_settle(self, view: TurnView) -> None:
        self.header.value = f"<b>{esc(self.headline())}</b>"
        if self.task is None or self.task.done():
            self.task = spawn(self._catch_up())

    async def _catch_up(self) -> None:
        """After an answer: add the turns paused since, and settle when nothing is left."""
        try:
            now = await self.agent.pending()
        except Exception:  # noqa: BLE001 - the listing stays as it is; Refresh shows the error
            return
        shown = {t.snapshot_id for t in self.turns}
        new = [t for t in now if t.snapshot_id not in shown]
        if new:
            self.turns += new
            self.views += [self._view(t) for t in new]
            self._draw()
        self.header.value = f"<b>{esc(self.headline())}</b>"
        if self.views and all(v.settled for v in self.views) and self.displayed:
            self.show_record()

    async def refresh(self) -> None:
        """Read the paused turns from the store again and redraw."""
        try:
            self.show(await self.agent.pending())
        except Exception as exc:  # noqa: BLE001 - shown in the widget, where the user sees it
            self.header.value = error_html(None, str(exc) if isinstance(exc, NbAgentsError) else repr(exc))

    def _refresh_soon(self) -> None:
        if self.task is None or self.task.done():
            self.task = spawn(self.refresh())

    def _static_bundle(self) -> dict[str, Any]:
        if not any(v.settled for v in self.views):
            return dict(pending_bundle(self.turns))
        shown = [v._static_bundle() for v in self.views]
        head = self.headline()
        return {
            "text/plain": "\n\n".join([head, *(b["text/plain"] for b in shown)]),
            "text/html": f'<div class="nba-pending" style="{BOX}"><b>{esc(head)}</b>'
            + "".join(b["text/html"] for b in shown)
            + "</div>",
        }

    def __repr__(self) -> str:
        return f"PendingView(agent={self.agent.name!r}, turns={len(self.turns)})"


def pending(agent: Agent, *, answered_by: str | None = None) -> PendingView:
    """The paused turns of `agent` as forms; works in a cell, sync or async.

    In a running loop (a notebook cell) the store is read by a task on that
    loop (``view.task``) and the forms appear when it is done; with no loop
    running, it is read right away (``agent.pending_sync()``). The view is
    awaitable: ``view = await pending(agent)`` returns it once the turns are read.

    Example:
        >>> store = nba.SqliteSessionStore("bank.db")                      # doctest: +SKIP
        >>> agent = nba.define_agent("bank", model=model, store=store)    # doctest: +SKIP
        >>> pending(agent)       # after a kernel restart: answer right here  # doctest: +SKIP
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return PendingView(agent, agent.pending_sync(), answered_by=answered_by)
    view = PendingView(agent, answered_by=answered_by)
    view.task = spawn(view.refresh())
    return view


async def apending(agent: Agent, *, answered_by: str | None = None) -> PendingView:
    """Deprecated: use ``await pending(agent)``."""
    warnings.warn(
        "apending(agent) is deprecated: use `await pending(agent)` (the view is awaitable)",
        DeprecationWarning,
        stacklevel=2,
    )
    return PendingView(agent, await agent.pending(), answered_by=answered_by)
