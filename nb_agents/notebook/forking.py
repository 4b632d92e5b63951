"""`ForkPanel`: "Try another answer" under an answered turn, and the answers compared flat.

An answered turn's answer took effect once; to see what another answer does,
the panel forks the pause (`nb_agents.Agent.fork`: a copy in a session of its
own, its tools run once per branch) and shows a fresh form for the fork right
below (no card inside the card). When the fork's turn is finished too, the
form gives way to one flat table, side by side: a column for each answer (what
was answered, what ran, the reply), under the question asked once
(`nb_agents.notebook.compare`). One "Try another answer" button stays at the
bottom (hidden while a fork waits for its answer); each click makes another
fork and another table.

A `TurnView` with a panel stays live once settled (its output is not replaced
by the record): like a form still waiting, it is saved as its record by the
server extension (`nb_agents.jupyter_extension`), and static mode shows no widget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .._sync import start as spawn
from ..chat import Chat
from ..errors import NbAgentsError
from ..render import error_html
from ..render._html import MUTED
from ..responses import AgentResponse
from .compare import compare
from .controls import button

if TYPE_CHECKING:
    import asyncio

    from .view import TurnView

__all__ = ["ForkPanel", "can_fork", "final_result"]

_SEPARATOR = "1px solid var(--jp-border-color2, #ccc)"


def can_fork(view: TurnView) -> bool:
    """Whether the view's pause can be forked here: a local agent with a store, or client state.

    A fork's own view is not forked again (its answers are compared under the original), nor
    is a pause whose deadline passed (a copy would expire at once).
    """
    res, agent = view.response, view.chat.agent if view.chat is not None else None
    if agent is None or not res.interrupts or view.fork_of is not None:
        return False
    if any(getattr(f, "expired", None) is not None for f in view.forms):
        return False
    if res.snapshot_id:
        return agent.can_fork
    return res.state is not None


def final_result(view: TurnView) -> AgentResponse | None:
    """Where a view's turn ended: its result, or its re-paused child's, down the chain."""
    while view.child is not None and view.child.result is not None:
        view = view.child
    return view.result


class ForkPanel(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """The "Try another answer" button of an answered `TurnView`, and the answers it compares.

    Attributes:
        view: The answered view whose pause is forked.
        branches: The `TurnView` of each fork, oldest first.
        comparisons: The HTML of each fork's side-by-side table, once its turn finished.
        task: The fork being made, if any (await it in tests).
    """

    def __init__(self, view: TurnView) -> None:
        super().__init__()
        self.view = view
        self.branches: list[TurnView] = []
        self.comparisons: list[str] = []
        self.task: asyncio.Task[TurnView | None] | None = None
        self.button = button(
            "Try another answer",
            tooltip="Fork this pause and answer it differently (the answer above stays as it is)",
        )
        self.button.layout.align_self = "flex-start"
        self.button.on_click(lambda _b: self.try_another())
        self.status = widgets.HTML()
        self.box = widgets.VBox()
        self.children = [self.box, self.status, self.button]
        self.add_class("nba-fork-panel")

    def try_another(self) -> asyncio.Task[TurnView | None] | None:
        """Fork the pause and show a fresh form for the fork (the button does this)."""
        if self.task is not None and not self.task.done():
            return self.task
        self.button.disabled = True
        self.status.value = f'<span style="{MUTED}">Copying the pause…</span>'
        self.task = spawn(self._fork())
        return self.task

    async def _fork(self) -> TurnView | None:
        view = self.view
        try:
            chat = await _fork_chat(view)
        except Exception as exc:  # noqa: BLE001 - shown where the user can act on it
            self.status.value = error_html(
                exc.status if isinstance(exc, NbAgentsError) else None, f"Could not fork: {exc}"
            )
            self.button.disabled = False
            return None
        assert chat.last is not None
        # a view of the same kind as the one answered (the panel never imports the view's module)
        by = None if getattr(view, "you", False) else view.answered_by
        branch = type(view)(chat.last, chat, answered_by=by, on_settle=self._branch_settled)
        branch.fork_of = view
        branch.layout = widgets.Layout(border_top=_SEPARATOR, padding="6px 0 0 0", margin="6px 0 0 0")
        branch.add_class("nba-fork")
        self.branches.append(branch)
        head = widgets.HTML(
            value=f'<div style="{MUTED}"><b>Another answer</b>: the same question, answered anew. '
            "Once it is done, the two answers show side by side.</div>"
        )
        self.box.children = [*self.box.children, head, branch]
        self.status.value = ""
        self.button.disabled = False
        self.button.layout.display = "none"  # one fork at a time: answer this one first
        return branch

    def _branch_settled(self, branch: TurnView) -> None:
        mine, theirs = final_result(self.view), final_result(branch)
        if mine is None or theirs is None:
            return
        n = len(self.branches)
        labels = ("First answer", "Another answer" if n == 1 else f"Another answer ({n})")
        html = compare(mine, theirs, labels=labels).html(pause=False)
        self.comparisons.append(html)
        self.box.children = [widgets.HTML(value=c) for c in self.comparisons]
        self.button.layout.display = None
        self.view.show_settled()  # the question once, then the answers side by side
        self.view.refresh_record()

    def record_html(self) -> str:
        """The answers compared, as the view's record shows them."""
        return "".join(self.comparisons)

    def __repr__(self) -> str:
        return f"ForkPanel(branches={len(self.branches)})"


async def _fork_chat(view: TurnView) -> Chat:
    res, chat = view.response, view.chat
    assert chat is not None
    agent: Any = chat.agent
    if res.snapshot_id:
        forked: Chat = await agent.fork(res.snapshot_id)
        return forked
    assert res.state is not None
    copy = Chat(agent, state=res.state.model_copy(deep=True))
    last = AgentResponse(res.raw, custom=res.custom, chat=copy)
    last.messages = list(res.messages)
    copy.last = last
    return copy
