"""`ForkPanel`: "Try another answer" under an answered turn, and the branches it makes.

An answered turn's answer took effect once; to see what another answer does,
the panel forks the pause (`nb_agents.Agent.fork`: a copy in a session of its
own, its tools run once per branch) and shows a fresh `TurnView` for the fork
below. When the fork's turn is finished too, the two continuations are shown
side by side (`nb_agents.notebook.compare`). Each click makes another fork.

A `TurnView` with a panel stays live once settled (its output is not replaced
by the record): like a form still waiting, it is saved as its record by the
server extension (`nb_agents.jupyter_extension`), and static mode shows no widget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..chat import Chat
from ..render import error_html
from ..render._html import MUTED
from ..responses import AgentResponse
from ._tasks import spawn
from .compare import compare

if TYPE_CHECKING:
    import asyncio

    from .view import TurnView

__all__ = ["ForkPanel", "can_fork", "final_result"]

_BRANCH = "margin:6px 0 0 0;padding-left:8px;border-left:3px solid var(--jp-brand-color1,#1976d2)"


def can_fork(view: TurnView) -> bool:
    """Whether the view's pause can be forked here: a local agent with a store, or client state."""
    res, agent = view.response, getattr(view.chat, "agent", None)
    if agent is None or not res.interrupts:
        return False
    if res.snapshot_id:
        return callable(getattr(agent, "fork", None)) and getattr(agent, "store", None) is not None
    return res.state is not None


def final_result(view: TurnView) -> AgentResponse | None:
    """Where a view's turn ended: its result, or its re-paused child's, down the chain."""
    while view.child is not None and view.child.result is not None:
        view = view.child
    return view.result


class ForkPanel(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """The "Try another answer" button of an answered `TurnView`, and the forks it made.

    Attributes:
        view: The answered view whose pause is forked.
        branches: The `TurnView` of each fork, oldest first.
        comparisons: The HTML of each fork's side-by-side view, once its turn finished.
        task: The fork being made, if any (await it in tests).
    """

    def __init__(self, view: TurnView) -> None:
        super().__init__()
        self.view = view
        self.branches: list[TurnView] = []
        self.comparisons: list[str] = []
        self.task: asyncio.Task[TurnView | None] | None = None
        self.button = widgets.Button(
            description="Try another answer",
            icon="code-fork",
            tooltip="Fork this pause and answer it differently (the answer above stays as it is)",
            layout=widgets.Layout(width="auto", align_self="flex-start"),
        )
        self.button.on_click(lambda _b: self.try_another())
        self.status = widgets.HTML()
        self.box = widgets.VBox()
        self.children = [self.button, self.status, self.box]
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
            self.status.value = error_html(getattr(exc, "status", None), f"Could not fork: {exc}")
            self.button.disabled = False
            return None
        assert chat.last is not None
        n = len(self.branches) + 1
        # a view of the same kind as the one answered (the panel never imports the view's module)
        branch = type(view)(chat.last, chat, answered_by=view.answered_by, on_settle=self._branch_settled)
        self.branches.append(branch)
        head = widgets.HTML(
            value=f'<div style="{MUTED}"><b>Another answer</b> (fork {n}: the same pause, answered anew)'
            "</div>"
        )
        block = widgets.VBox([head, branch, widgets.HTML()])
        block.layout = widgets.Layout(
            border_left="3px solid var(--jp-brand-color1, #1976d2)", padding="0 0 0 8px"
        )
        block.add_class("nba-fork")
        self.box.children = [*self.box.children, block]
        self.status.value = ""
        self.button.disabled = False
        return branch

    def _branch_settled(self, branch: TurnView) -> None:
        mine, theirs = final_result(self.view), final_result(branch)
        if mine is None or theirs is None:
            return
        html = compare(mine, theirs, labels=("This answer", "Another answer"))._repr_mimebundle_()[
            "text/html"
        ]
        self.comparisons.append(html)
        for block in self.box.children:
            if branch in block.children:
                block.children = [*block.children[:-1], widgets.HTML(value=html)]
        self.view.refresh_record()

    def record_html(self) -> str:
        """The forks as the view's record shows them: each branch's record, then the comparisons."""
        parts = []
        for n, branch in enumerate(self.branches, 1):
            parts.append(
                f'<div class="nba-fork" style="{_BRANCH}"><div style="{MUTED}"><b>Another answer</b> '
                f"(fork {n})</div>{branch.record_html()}</div>"
            )
        parts.extend(self.comparisons)
        return "".join(parts)

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
    copy.last = AgentResponse(res.raw, custom=res.custom, chat=copy)
    copy.last.messages = list(res.messages)
    return copy
