"""`TurnView`: the widget for one turn, what a response shows in a notebook cell.

It shows the turn (tool calls collapsed) and an `InterruptForm` per
interrupt. All interrupts of a turn are answered together: when every form
has recorded its answer, the view sends one resume (``chat.resume_stream``)
as a task on the running loop, freezes the forms and streams the
continuation into itself below them. A re-pause shows new forms in a nested
`TurnView`; a failure (a rejected resume, "already resumed", a tool error)
is shown in the view and the forms open again, so the interrupt can be
answered again.
"""

from __future__ import annotations

import asyncio
from typing import Any

import ipywidgets as widgets

from ..chat import Chat
from ..render import error_html, output_html, part_html, response_bundle, stream_html
from ..responses import AgentResponse
from ..tools import Tool
from ..types import ToolResume
from ._bundle import WithStaticFallback
from ._tasks import spawn
from .elicitation import ElicitationForm, is_elicitation
from .forms import InterruptForm
from .progress import progress_bars

__all__ = ["TurnView", "agent_tools"]


def agent_tools(chat: Chat | None) -> dict[str, Tool]:
    """The tools of a chat's agent by name; empty when unknown (a remote agent)."""
    tools = getattr(chat.agent, "tools", None) if chat is not None else None
    if not isinstance(tools, dict):
        return {}
    return {k: v for k, v in tools.items() if isinstance(v, Tool)}


class TurnView(WithStaticFallback, widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """The widget for one turn: forms for its interrupts, the continuation below.

    Args:
        response: The turn to show.
        chat: The chat that resumes it (default: ``response.chat``).
        answered_by: Who answers, recorded in the audit trail.

    Attributes:
        forms: One `InterruptForm` per interrupt.
        task: The running (or finished) resume task; await it in tests.
        last_resume: The `ToolResume` last sent.
        result: The continuation's `AgentResponse` once it arrived.
        child: The nested `TurnView` when the continuation paused again.

    Example:
        >>> res = await chat.send("Transfer $500 to savings")    # doctest: +SKIP
        >>> TurnView(res)        # in a cell: approve, deny or answer right there
    """

    def __init__(self, response: AgentResponse, chat: Chat | None = None, *, answered_by: str | None = None):
        super().__init__()
        self.response = response
        self.chat: Chat | None = chat if chat is not None else response.chat
        self.answered_by = answered_by
        tools = agent_tools(self.chat)
        self.forms = [
            (ElicitationForm if is_elicitation(i) else InterruptForm)(
                i, tools.get(i.name), on_answer=self._on_answer
            )
            for i in response.interrupts
        ]
        self.task: asyncio.Task[AgentResponse | None] | None = None
        self.last_resume: ToolResume | None = None
        self.result: AgentResponse | None = None
        self.child: TurnView | None = None
        self.head = widgets.HTML(value=output_html(response.raw, interrupts=False))
        self.status = widgets.HTML()
        self.stream = widgets.HTML()
        self.continuation = widgets.VBox([self.stream])
        self.children = [self.head, *self.forms, self.status, self.continuation]

    # -- answering ---------------------------------------------------------------------
    def _on_answer(self, form: InterruptForm) -> None:
        if all(f.answer is not None for f in self.forms):
            self.submit()

    def submit(self) -> asyncio.Task[AgentResponse | None] | None:
        """Send the recorded answers as one resume (the forms call this when all are answered)."""
        if self.task is not None and not self.task.done():
            return self.task
        answers = [f.answer for f in self.forms]
        if not answers or any(a is None for a in answers):
            return None
        if self.chat is None:
            self._fail("this response has no chat to resume; pass chat= to TurnView")
            return None
        respond = [a.part for a in answers if a is not None and a.kind == "respond"]
        restart = [a.part for a in answers if a is not None and a.kind == "restart"]
        meta = {"answeredBy": self.answered_by} if self.answered_by else None
        self.last_resume = ToolResume(respond=respond, restart=restart, metadata=meta)
        for form in self.forms:
            form.lock()
        self.status.value = "<i>resuming…</i>"
        self.task = spawn(self._resume(self.last_resume))
        return self.task

    def _resume_chat(self) -> Chat:
        """The chat positioned on this turn; a fresh one when the given chat moved on."""
        chat, res = self.chat, self.response
        assert chat is not None
        if res.snapshot_id and chat.snapshot_id != res.snapshot_id:
            return Chat(chat.agent, snapshot_id=res.snapshot_id)
        if not res.snapshot_id and res.state is not None and chat.state is not res.state:
            return Chat(chat.agent, state=res.state)
        return chat

    async def _resume(self, resume: ToolResume) -> AgentResponse | None:
        chat = self._resume_chat()
        text, tools = "", ""
        bars: dict[tuple[str, str, str], str] = {}
        try:
            turn = chat.resume_stream(resume.respond, resume.restart, resume.metadata)
            async for chunk in turn:
                text += chunk.text
                mc = chunk.model_chunk
                if mc is not None and mc.role == "tool":
                    tools += "".join(part_html(p) for p in mc.content if p.tool_response is not None)
                bars = progress_bars(bars, chunk)  # MCP progress notifications
                self.stream.value = tools + "".join(bars.values()) + stream_html(text)
            res = await turn.response
        except Exception as exc:  # noqa: BLE001 - shown in the widget, where the user can act on it
            self.stream.value = ""
            self._fail(str(exc) if hasattr(exc, "status") else f"{type(exc).__name__}: {exc}")
            return None
        self.result = res
        self.status.value = ""
        if res.finish_reason == "interrupted":
            self.stream.value = tools
            self.child = TurnView(res, chat, answered_by=self.answered_by)
            self.continuation.children = [self.stream, self.child]
        else:
            self.stream.value = tools + output_html(res.raw, tools=False)
        return res

    def _fail(self, message: str) -> None:
        self.status.value = error_html(None, message)
        for form in self.forms:
            form.reset()

    # -- display ---------------------------------------------------------------------------
    def _static_bundle(self) -> dict[str, Any]:
        return dict(response_bundle(self.response))

    def __repr__(self) -> str:
        return f"TurnView({self.response!r}, forms={len(self.forms)})"
