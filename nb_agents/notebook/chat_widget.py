"""`ChatWidget`: a chat box in a cell, with forms for interrupted turns inline.

A transcript, a text box and a Send button. Each reply streams into the
transcript as it arrives; a turn that pauses shows a `TurnView` (its forms)
in place of a model bubble, and answering it continues the same chat.
"""

from __future__ import annotations

import asyncio
from typing import Any

import ipywidgets as widgets

from ..chat import Chat
from ..render import error_html, message_bundle, output_html, part_html, stream_html
from ..responses import AgentResponse
from ..types import Message, Part
from ._bundle import WithStaticFallback
from ._tasks import spawn
from .progress import progress_bars
from .view import TurnView

__all__ = ["ChatWidget"]


def _bubble(msg: Message) -> Any:
    return widgets.HTML(value=message_bundle(msg)["text/html"])


class ChatWidget(WithStaticFallback, widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """A chat with an agent (or an existing `Chat`) as a widget.

    Args:
        agent_or_chat: An agent (a new chat is started) or a `Chat` to continue.
        placeholder: The text box's placeholder.
        answered_by: Who answers interrupts, recorded in the audit trail.

    Attributes:
        chat: The `Chat` the widget drives.
        message_box: The text box; send_button: the Send button.
        task: The running (or last) turn task; await it in tests.
        views: The `TurnView` of every paused turn shown so far.

    Example:
        >>> ChatWidget(agent)         # type, press Send, answer forms inline  # doctest: +SKIP
    """

    def __init__(self, agent_or_chat: Any, *, placeholder: str = "Message", answered_by: str | None = None):
        super().__init__()
        self.chat: Chat = agent_or_chat if isinstance(agent_or_chat, Chat) else agent_or_chat.chat()
        self.answered_by = answered_by
        self.task: asyncio.Task[AgentResponse | None] | None = None
        self.views: list[TurnView] = []
        self.transcript = widgets.VBox(self._history())
        self.message_box = widgets.Text(placeholder=placeholder)
        self.message_box.layout.width = "80%"
        self.send_button = widgets.Button(description="Send", button_style="primary")
        self.send_button.on_click(lambda _: self.send())
        self.children = [self.transcript, widgets.HBox([self.message_box, self.send_button])]

    def _history(self) -> list[Any]:
        """The chat's earlier messages; its last turn as forms if it is paused."""
        msgs = list(self.chat.messages)
        last = self.chat.last
        if last is not None and last.finish_reason == "interrupted" and msgs and msgs[-1].role == "model":
            view = TurnView(last, self.chat, answered_by=self.answered_by)
            self.views.append(view)
            return [*(_bubble(m) for m in msgs[:-1]), view]
        return [_bubble(m) for m in msgs]

    def send(self, text: str | None = None) -> asyncio.Task[AgentResponse | None] | None:
        """Send `text` (default: the text box) and stream the reply into the transcript."""
        text = self.message_box.value if text is None else text
        if not text.strip() or (self.task is not None and not self.task.done()):
            return None
        self.message_box.value = ""
        self.send_button.disabled = True
        reply = widgets.VBox([widgets.HTML()])
        user = Message(role="user", content=[Part(text=text)])
        self.transcript.children = [*self.transcript.children, _bubble(user), reply]
        self.task = spawn(self._run(text, reply))
        return self.task

    async def _run(self, text: str, reply: Any) -> AgentResponse | None:
        stream = reply.children[0]
        streamed, tools = "", ""
        bars: dict[tuple[str, str, str], str] = {}
        try:
            turn = self.chat.send_stream(text)
            async for chunk in turn:
                streamed += chunk.text
                mc = chunk.model_chunk
                if mc is not None and mc.role == "tool":
                    tools += "".join(part_html(p) for p in mc.content if p.tool_response is not None)
                bars = progress_bars(bars, chunk)  # MCP progress notifications
                stream.value = tools + "".join(bars.values()) + stream_html(streamed)
            res = await turn.response
        except Exception as exc:  # noqa: BLE001 - shown in the transcript, where the user sees it
            stream.value = tools + error_html(None, str(exc) if hasattr(exc, "status") else repr(exc))
            return None
        finally:
            self.send_button.disabled = False
        if res.finish_reason == "interrupted":
            stream.value = tools
            view = TurnView(res, self.chat, answered_by=self.answered_by)
            self.views.append(view)
            reply.children = [stream, view]
        else:
            stream.value = tools + output_html(res.raw, tools=False)
        return res

    def _static_bundle(self) -> dict[str, Any]:
        """The transcript as static text and HTML."""
        shown = [message_bundle(m) for m in self.chat.messages]
        return {
            "text/plain": "\n\n".join(b["text/plain"] for b in shown) or "ChatWidget (empty)",
            "text/html": "".join(b["text/html"] for b in shown),
        }

    def __repr__(self) -> str:
        return (
            f"ChatWidget(agent={getattr(self.chat.agent, 'name', '?')!r}, messages={len(self.chat.messages)})"
        )
