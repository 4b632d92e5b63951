"""`ChatWidget`: a chat box in a cell, with forms for interrupted turns inline.

A header (the agent's name and what the box is), a transcript ("You",
"Assistant", tool rows), a text box where Enter sends and Shift+Enter starts
a new line (`MessageBox`), Send and Stop. Before the first message the
transcript says what to do ("Ask bankingAgent something"), with example
prompts to click when given. Replies stream into the transcript as markdown;
the transcript grows with the conversation up to most of the window's height,
then scrolls, keeping the newest message in view. A turn that pauses shows a
`TurnView` (its forms) in place of a reply; while it waits, new messages are
held back (the model must hear the answer first) and the box says so. A
question answered elsewhere (another cell, tab or process) closes with who
answered, and the chat follows that answer (`catching_up`): it shows what
followed and goes on from there. Stop aborts the turn in flight.

Built from a stored chat (``agent.chat(session_id=...)`` or
``Chat(agent, snapshot_id=...)``), the widget reads the conversation from
the store (``agent.get_snapshot``) and shows it, a paused last turn as forms.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets

from .._sync import start as spawn
from ..chat import Chat
from ..errors import NbAgentsError
from ..render import error_html, message_bundle, output_html, stream_html, tools_of
from ..render._html import MUTED, esc
from ..render.turns import tool_outputs
from ..responses import AgentResponse
from ..types import AgentOutput, Message, Part
from ._bundle import WithStaticFallback
from .catching_up import chat_at, stale_view, what_followed
from .controls import button
from .message_box import MessageBox
from .partial import follow
from .streaming import LiveOutput
from .view import TurnView

__all__ = ["ChatWidget"]

_ASSISTANT = '<div class="nba-role" style="font-weight:600;font-size:90%;margin-top:4px">Assistant</div>'
_WAITING = "Answer the question above first: the assistant waits for it."
_CATCHING_UP = (
    "The question above was answered elsewhere: the chat is reading what that answer led to. "
    "Send again in a moment, and the message goes on from there."
)
_BUBBLE = {
    "user": (
        "background:var(--jp-layout-color2,#eef2f7);border-radius:8px;padding:4px 10px;margin:4px 0 4px 15%"
    ),
    "model": "padding:4px 10px;margin:4px 15% 4px 0",
}


def _with_results(msgs: list[Message]) -> list[Message]:
    """The messages to show, each tool call carrying its result (the tool messages are not shown)."""
    results = tool_outputs(msgs)

    def shown(p: Part) -> Part:
        tr = p.tool_request
        if tr is None or p.is_interrupt or (tr.name, tr.ref) not in results:
            return p
        return p.with_metadata(pendingOutput=results[(tr.name, tr.ref)])  # how a row shows its result

    return [m.model_copy(update={"content": [shown(p) for p in m.content]}) for m in msgs if m.role != "tool"]


def _bubble(msg: Message) -> Any:
    style = _BUBBLE.get(msg.role, "padding:4px 10px")
    return widgets.HTML(value=f'<div style="{style}">{message_bundle(msg)["text/html"]}</div>')


def _note(text: str) -> str:
    return f'<div class="nba-chat-note" style="{MUTED};padding:2px 10px">{text}</div>'


_HEADER = (
    "padding:6px 10px;border-bottom:1px solid var(--jp-border-color2,#ddd);line-height:1.4;"
    "color:var(--jp-content-font-color1,#222)"
)
_EMPTY = "padding:10px 0 4px;line-height:1.4;color:var(--jp-content-font-color2,#666)"


def _name(chat: Chat) -> str:
    return chat.agent.name or "the agent"


def header_html(chat: Chat) -> str:
    """The chat's header: the agent's name, and its description or what the box is for."""
    about = chat.agent.description.strip() or "A chat with this agent."
    return (
        f'<div class="nba-chat-header" style="{_HEADER}">'
        f'<span style="font-weight:600">{esc(_name(chat))}</span>'
        f'<div style="{MUTED}">{esc(about)}</div></div>'
    )


class ChatWidget(WithStaticFallback, widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """A chat with an agent (or an existing `Chat`) as a widget.

    Args:
        agent_or_chat: An agent (a new chat is started) or a `Chat` to continue;
            a chat positioned by ``session_id``/``snapshot_id`` shows its stored history.
        placeholder: The text box's placeholder and label (default: "Message <agent name>").
        answered_by: Who answers interrupts, recorded in the audit trail.
        examples: Messages to offer before the first one, as buttons that send them.

    Attributes:
        chat: The `Chat` the widget drives.
        message_box: The text box (a `MessageBox`); send_button, stop_button: the buttons.
        header: The header (the agent's name); empty: what the transcript shows before the first message.
        task: The running (or last) turn task; await it in tests.
        loading: The task reading the stored history, when there is one.
        views: The `TurnView` of every paused turn shown so far.

    Example:
        >>> ChatWidget(agent, examples=["Transfer $500 to savings"])   # click, or type  # doctest: +SKIP
        >>> ChatWidget(agent.chat(session_id="support-1"))   # the stored conversation  # doctest: +SKIP
    """

    def __init__(
        self,
        agent_or_chat: Any,
        *,
        placeholder: str | None = None,
        answered_by: str | None = None,
        examples: Sequence[str] = (),
    ):
        super().__init__()
        self.chat: Chat = agent_or_chat if isinstance(agent_or_chat, Chat) else agent_or_chat.chat()
        self.answered_by = answered_by
        self.placeholder = placeholder if placeholder is not None else f"Message {_name(self.chat)}"
        self.task: asyncio.Task[AgentResponse | None] | None = None
        self._running = False
        self.loading: asyncio.Task[None] | None = None
        self.catching_up: asyncio.Task[None] | None = None  # following an answer given elsewhere
        self.views: list[TurnView] = []
        self.history: list[Message] = []  # read from the store; the chat's own list holds what follows
        self.header = widgets.HTML(value=header_html(self.chat), layout=widgets.Layout(margin="0"))
        self.empty = self._empty_state(list(examples))
        self.transcript = widgets.VBox(layout=widgets.Layout(flex="0 0 auto"))  # grows, never squeezed
        # column-reverse keeps the scroll position at the bottom: the newest message stays in view;
        # the box grows with the conversation up to most of the window, then scrolls
        self.scroller = widgets.Box(
            [self.transcript],
            layout=widgets.Layout(flex_flow="column-reverse", overflow="auto", max_height="70vh"),
        )
        self.notice = widgets.HTML()
        self.message_box = MessageBox(placeholder=self.placeholder, label=placeholder or "Message")
        self.message_box.on_submit(self._submitted)
        # set here, not only by the box's script: ipywidgets' layout would reset it on some renders
        self.message_box.layout.flex = "1 1 auto"
        self.send_button = button("Send", "primary")
        self.send_button.on_click(lambda _: self.send())
        self.stop_button = button("Stop", "warning")
        self.stop_button.on_click(lambda _: self.stop())
        self.stop_button.layout.display = "none"
        row = widgets.HBox(
            [self.message_box, self.send_button, self.stop_button],
            layout=widgets.Layout(align_items="flex-end", width="100%", padding="6px 10px"),
        )
        self.children = [self.header, self.empty, self.scroller, self.notice, row]
        self.layout = widgets.Layout(
            max_width="60em", border="1px solid var(--jp-border-color2, #ccc)", margin="4px 0"
        )
        self.add_class("nba-chat")
        if self.chat.messages:
            self._show_history(list(self.chat.messages), self.chat.last)
        elif self.chat.snapshot_id or self.chat.session_id:
            self.transcript.children = [widgets.HTML(value=_note("Loading the conversation…"))]
            self.loading = spawn(self._load())
        self._update_controls()

    def _empty_state(self, examples: list[str]) -> Any:
        """What the transcript shows before the first message: what to do, and examples to click."""
        name = esc(_name(self.chat))
        ask = "type below and press Enter, or try an example" if examples else "type below and press Enter"
        words = (
            f'<div style="font-size:110%;color:var(--jp-content-font-color1,#222)">Ask {name} something: '
            f"{ask}.</div><div>Shift+Enter starts a new line. When {name} wants to run a tool that needs "
            "your approval, the question appears here as a form: answer it, and the reply goes on.</div>"
        )
        note = widgets.HTML(value=f'<div class="nba-chat-empty" style="{_EMPTY}">{words}</div>')
        buttons = []
        for text in examples:
            made = button(text, tooltip=f"Send: {text}")
            made.on_click(lambda _b, text=text: self.send(text))
            buttons.append(made)
        row = widgets.HBox(buttons, layout=widgets.Layout(flex_flow="row wrap"))
        return widgets.VBox([note, row], layout=widgets.Layout(padding="0 10px 6px"))

    # -- history ---------------------------------------------------------------------------
    async def _load(self) -> None:
        chat = self.chat
        try:
            if chat.snapshot_id:
                snap = await chat.agent.get_snapshot(chat.snapshot_id)
            else:
                snap = await chat.agent.get_snapshot(session_id=chat.session_id)
        except Exception as exc:  # noqa: BLE001 - shown in the transcript, where the user sees it
            self.transcript.children = [
                widgets.HTML(value=error_html(None, f"could not read the chat: {exc}"))
            ]
            return
        msgs = list(snap.state.messages) if snap is not None and snap.state is not None else []
        paused = None
        if snap is not None and snap.finish_reason == "interrupted" and msgs and msgs[-1].role == "model":
            out = AgentOutput(
                session_id=snap.session_id,
                snapshot_id=snap.snapshot_id,
                message=msgs[-1],
                finish_reason="interrupted",
            )
            paused = AgentResponse(out, chat=chat)
        self.history = msgs
        self._show_history(msgs, paused)

    def _show_history(self, msgs: list[Message], last: AgentResponse | None) -> None:
        """The earlier messages; the last turn as forms when it is paused."""
        rows: list[Any] = []
        if last is not None and last.finish_reason == "interrupted" and msgs and msgs[-1].role == "model":
            rows = [_bubble(m) for m in _with_results(msgs[:-1])]
            rows.append(self._view(last))
        else:
            rows = [_bubble(m) for m in _with_results(msgs)]
        self.transcript.children = rows
        self._update_controls()

    # -- sending -----------------------------------------------------------------------------
    @property
    def waiting(self) -> TurnView | None:
        """The form that waits for an answer, if any (new messages wait for it)."""
        return next((v for v in self.views if not v.settled), None)

    @property
    def busy(self) -> bool:
        """Whether a turn is in flight."""
        return self._running

    def send(self, text: str | None = None) -> asyncio.Task[AgentResponse | None] | None:
        """Send `text` (default: the text box) and stream the reply into the transcript."""
        text = self.message_box.value if text is None else text
        if not text.strip() or self.busy:
            return None
        if self.waiting is not None:
            self.notice.value = _note(_WAITING)
            self.waiting.recheck()  # answered elsewhere meanwhile? then the chat follows that answer
            return None
        if self.catching_up is not None and not self.catching_up.done():
            self.notice.value = _note(_CATCHING_UP)  # sent now, it would leave from the old question
            return None
        if self.message_box.value == text:
            self.message_box.value = ""
        self.notice.value = ""
        reply = widgets.VBox([widgets.HTML()], layout=widgets.Layout(padding="4px 10px", margin="0 15% 0 0"))
        user = Message(role="user", content=[Part(text=text)])
        self.transcript.children = [*self.transcript.children, _bubble(user), reply]
        self._running = True
        self.task = spawn(self._run(text, reply))
        self._update_controls()
        return self.task

    def _submitted(self, text: str) -> None:
        """Enter in the box: send, or put the text back when it cannot go yet."""
        if self.send(text) is None and text.strip():
            self.message_box.value = text

    def stop(self) -> asyncio.Task[str | None] | None:
        """Abort the turn in flight (``chat.abort()``); its reply ends where it stopped."""
        if not self.busy:
            return None
        self.stop_button.disabled = True
        return spawn(self.chat.abort())

    async def _run(self, text: str, reply: Any) -> AgentResponse | None:
        stream = reply.children[0]
        stream.value = _ASSISTANT
        live = LiveOutput(lambda html: setattr(stream, "value", html), prefix=_ASSISTANT)
        try:
            res = await live.follow(self.chat.send_stream(text))
        except Exception as exc:  # noqa: BLE001 - shown in the transcript, where the user sees it
            stream.value = (
                _ASSISTANT
                + live.tools
                + error_html(None, str(exc) if isinstance(exc, NbAgentsError) else repr(exc))
            )
            self._running = False
            self._update_controls()
            return None
        if res.finish_reason == "interrupted":
            stream.value = live.tools
            reply.children = [stream, self._view(res)]
        elif res.finish_reason == "aborted":
            stream.value = _ASSISTANT + live.tools + stream_html(live.text) + _note("Stopped.")
        else:
            known = tools_of(self.chat)
            body = output_html(res.raw, tools=False, box=False, known_tools=known)
            stream.value = _ASSISTANT + live.tools + body
        self._running = False
        self._update_controls()
        return res

    def _view(self, res: AgentResponse) -> TurnView:
        # answered elsewhere, the widget moves the chat itself, with the transcript (`_catch_up`)
        view = TurnView(
            res, self.chat, answered_by=self.answered_by, on_settle=self._settled, moves_chat=False
        )
        self.views.append(view)
        return view

    def _settled(self, view: TurnView) -> None:
        self._update_controls()
        if view is self.views[-1] and not self.busy and stale_view(view) is not None:
            self.catching_up = spawn(self._catch_up(view))

    async def _catch_up(self, view: TurnView) -> None:
        """The question was answered elsewhere: show what followed, and go on from there."""
        try:
            await self._follow(view)
        finally:  # followed or not, messages may be sent again
            if _CATCHING_UP in self.notice.value:
                self.notice.value = ""

    async def _follow(self, view: TurnView) -> None:
        try:
            found = await what_followed(self.chat.agent, view)
        except Exception:  # noqa: BLE001 - the form says who answered; the chat stays where it was
            return
        if found is None or view is not self.views[-1] or self.busy:
            return
        snap, new = found
        went = chat_at(self.chat.agent, snap)
        if went.last is not None and new:
            rows = [*(_bubble(m) for m in _with_results(new[:-1])), self._view(went.last)]
        else:
            rows = [_bubble(m) for m in _with_results(new)]
        self.history = []  # the chat now holds the whole conversation
        follow(self.chat, went)
        self.transcript.children = [*self.transcript.children, *rows]
        self._update_controls()

    def _update_controls(self) -> None:
        self.empty.layout.display = "none" if self.transcript.children else None
        busy, waiting = self.busy, self.waiting is not None
        self.send_button.disabled = busy or waiting
        self.stop_button.layout.display = None if busy else "none"
        self.stop_button.disabled = False
        self.message_box.placeholder = _WAITING if waiting else self.placeholder
        if not waiting and self.notice.value and _WAITING in self.notice.value:
            self.notice.value = ""

    # -- display ---------------------------------------------------------------------------
    def _static_bundle(self) -> dict[str, Any]:
        """The transcript as static text and HTML."""
        shown = [message_bundle(m) for m in _with_results([*self.history, *self.chat.messages])]
        name = _name(self.chat)
        return {
            "text/plain": "\n\n".join([f"Chat with {name}", *(b["text/plain"] for b in shown)])
            if shown
            else f"Chat with {name} (no messages yet)",
            "text/html": f'<div style="border:1px solid var(--jp-border-color2,#ccc);max-width:60em">'
            f'{header_html(self.chat)}<div style="padding:4px 10px">'
            + ("".join(b["text/html"] for b in shown) or _note("No messages yet."))
            + "</div></div>",
        }

    def __repr__(self) -> str:
        n = len(self.history) + len(self.chat.messages)
        return f"ChatWidget(agent={self.chat.agent.name!r}, messages={n})"
