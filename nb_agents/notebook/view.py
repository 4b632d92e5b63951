"""`TurnView`: the widget for one turn, what a response shows in a notebook cell.

It shows a status line, the turn's finished tool calls, and an
`InterruptForm` per interrupt. All interrupts of a turn are answered
together: when every form has recorded its answer, the view sends one
resume (``chat.resume_stream``) as a task on the running loop, freezes the
forms and streams the continuation (as markdown) into itself below them.

The status line says where the turn is: waiting, sending, then in words what
happened ("Approved by ana at 14:02 · transferMoney ran"). A re-pause shows
new forms in a nested `TurnView`. A failure (a rejected resume, a tool error)
is shown and the forms open again, so the interrupt can be answered again.
A stale form, whose interrupt was answered elsewhere (another cell, another
tab), collapses to "Already answered (approved by bob at 14:01)", read from
the agent's audit trail when the agent is local.

Once the turn is finished (nothing left to ask), the view *settles*: the forms
give way to a record (the question, the answer, who, when, the reply), and a
view displayed in a cell replaces its output with that record alone, so a
saved notebook reads without a kernel and without the server extension
(JupyterLab shows "Error displaying widget: model not found" for any widget
whose kernel is gone, whatever else the output holds). A view inside a live
widget (a `ChatWidget`), or one shown with ``try_another=True``, stays live
instead, with a "Try another answer" button (`ForkPanel`) when the pause can
be forked (a local agent with a store): a fork of the pause, a fresh form for
it, and the two continuations side by side once the fork's turn is done.
Such a view is saved as its record only by the server extension
(`nb_agents.jupyter_extension`), as a form still waiting is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import ipywidgets as widgets

from ..chat import Chat
from ..nested import tool_for
from ..render import answer_line, error_html, output_html, part_html, record_words, stream_html, tools_of
from ..render._html import badge, esc
from ..render.turns import turn_ids
from ..responses import AgentResponse
from ..stores.base import AuditRecord
from ..tools import Tool
from ..types import ToolResume
from ._bundle import OUTPUT_METADATA, WithStaticFallback
from ._tasks import spawn
from .elicitation import ElicitationForm, is_elicitation
from .forking import ForkPanel, can_fork
from .forms import InterruptForm
from .identity import local_user
from .progress import progress_bars
from .records import form_record_html, turn_record_bundle

__all__ = ["TurnView", "agent_tools"]


def agent_tools(chat: Chat | None) -> dict[str, Tool]:
    """The tools of a chat's agent by name; empty when unknown (a remote agent)."""
    return {k: v for k, v in tools_of(chat).items() if isinstance(v, Tool)}


def _follow(chat: Chat, other: Chat) -> None:
    """Move `chat` to where `other` went (the chat a view was given follows its turn)."""
    chat.snapshot_id, chat.session_id = other.snapshot_id, other.session_id
    chat.messages, chat.custom, chat.artifacts = list(other.messages), other.custom, list(other.artifacts)
    chat.last = other.last


def _status(tone: str, word: str, text: str) -> str:
    return f'<div class="nba-live-status" style="margin-bottom:4px">{badge(word, tone)}{esc(text)}</div>'


class TurnView(WithStaticFallback, widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """The widget for one turn: forms for its interrupts, the continuation below.

    Args:
        response: The turn to show.
        chat: The chat that resumes it (default: ``response.chat``).
        answered_by: Who answers, recorded in the audit trail (``resume.metadata.answeredBy``).
        on_settle: Called with the view once its turn is finished (see the module docstring).
        try_another: Offer "Try another answer" once the turn is finished (a view displayed
            in a cell then stays live, and a saved notebook keeps its record only through the
            server extension). Default: only inside a live widget, such as a `ChatWidget`.

    Attributes:
        forms: One `InterruptForm` per interrupt.
        task: The running (or finished) resume task; await it in tests.
        last_resume: The `ToolResume` last sent.
        result: The continuation's `AgentResponse` once it arrived.
        child: The nested `TurnView` when the continuation paused again.
        state: ``"waiting"``, ``"sending"``, ``"answered"`` (paused again below),
            ``"done"``, or ``"stale"`` (answered elsewhere).
        outcome: The status in words, e.g. "Approved by ana at 14:02 · transferMoney ran".

    Example:
        >>> res = await chat.send("Transfer $500 to savings")    # doctest: +SKIP
        >>> TurnView(res, answered_by="ana")   # in a cell: approve, deny or answer right there
    """

    def __init__(
        self,
        response: AgentResponse,
        chat: Chat | None = None,
        *,
        answered_by: str | None = None,
        on_settle: Callable[[TurnView], None] | None = None,
        try_another: bool | None = None,
    ):
        super().__init__()
        self.response = response
        self.chat: Chat | None = chat if chat is not None else response.chat
        self.answered_by = answered_by if answered_by is not None else local_user()
        self.on_settle = on_settle
        self.try_another = try_another
        self.tools = agent_tools(self.chat)
        note = response.text
        self.forms = [
            ElicitationForm(i, tool_for(self.tools, i), on_answer=self._on_answer)
            if is_elicitation(i)
            else InterruptForm(
                i,
                tool_for(self.tools, i),  # a sub-agent's call: its tool, through the sub-agent tools
                on_answer=self._on_answer,
                note=note if n == 0 else "",
                keeps_rules=self.chat is None or self.chat.state is None,  # a client-managed chat has state
            )
            for n, i in enumerate(response.interrupts)
        ]
        self.task: asyncio.Task[AgentResponse | None] | None = None
        self.last_resume: ToolResume | None = None
        self.result: AgentResponse | None = None
        self.child: TurnView | None = None
        self.state = "waiting" if self.forms else "done"
        self.outcome = ""
        self.prior: list[AuditRecord] = []  # the answers found in the audit when this view was stale
        self.answered_at: datetime | None = None
        self.fork_panel: ForkPanel | None = None  # "Try another answer", once the turn is done
        self._sent: set[Any] = set()  # the forms whose answers took effect (partial answers)
        self._tools = ""  # the tool rows streamed so far by the partial answers
        self.header = widgets.HTML(value=self._waiting_line())
        self.head = widgets.HTML(
            value=output_html(response.raw, interrupts=False, status=False, box=False, ids=False)
        )
        self.footer = widgets.HTML(value=turn_ids(response.raw))
        self.status = widgets.HTML()
        # an answer that took effect and then failed (or was stopped) is not answered again:
        # it is retried, as a new attempt that the audit records
        self.retry_button = widgets.Button(description="Retry", icon="redo", button_style="warning")
        self.retry_button.on_click(lambda _b: self.retry())
        self.retry_button.layout.display = "none"
        self.stream = widgets.HTML()
        self.continuation = widgets.VBox([self.stream])
        parts = [self.header, self.head, *self.forms, self.status, self.retry_button]
        self.children = [*parts, self.continuation, self.footer]
        self.layout = widgets.Layout(
            border="1px solid var(--jp-border-color2, #ccc)",
            padding="6px 12px",
            margin="4px 0",
            max_width="60em",
        )
        self.add_class("nba-turn-view")

    def _waiting_line(self) -> str:
        n = len(self.forms)
        if not n:
            return ""
        if n == 1:
            return _status("wait", "waiting", "Waiting for your answer")
        if not self.partial:
            return _status("wait", "waiting", f"Waiting for your answers ({n} questions, sent together)")
        left = n - len(self._sent)
        done = f"{len(self._sent)} of {n} answered; " if self._sent else f"{n} questions: "
        return _status(
            "wait",
            "waiting",
            f"Waiting for your answers ({done}each is sent as you answer it, "
            f"and the turn resumes when the last is answered)"
            if left
            else "Sending…",
        )

    @property
    def partial(self) -> bool:
        """Whether each form of this turn answers on its own (``resume(partial=True)``).

        So it is for a turn paused on several interrupts of a stored session; a
        client-managed one (its state travels with each answer) answers them together.
        """
        return len(self.forms) > 1 and bool(self.response.snapshot_id)

    # -- answering ---------------------------------------------------------------------
    def _on_answer(self, form: InterruptForm) -> None:
        if self.partial:
            self.send_one(form)
        elif all(f.answer is not None for f in self.forms):
            self.submit()

    def send_one(self, form: InterruptForm) -> asyncio.Task[AgentResponse | None] | None:
        """Send one form's answer alone (a partial resume); the turn goes on once the last is in."""
        if form.answer is None or form in self._sent or self.chat is None:
            return None
        form.lock()
        self.answered_at = datetime.now(UTC)
        form.status.value = _status("info", "sending", "Sending this answer…")
        self.task = spawn(self._resume_one(form))
        return self.task

    def _keys(self, forms: list[Any]) -> set[tuple[str, str | None]]:
        return {(f.interrupt.name, f.interrupt.ref) for f in forms}

    def _same_pause(self, res: AgentResponse) -> bool:
        """Whether `res` is this turn still paused on some of its calls (not a new pause)."""
        if res.finish_reason != "interrupted" or not res.interrupts or res.message is None:
            return False
        calls = [
            (p.tool_request.name, p.tool_request.ref) for p in res.message.tool_requests if p.tool_request
        ]
        mine = self.response.message
        asked = (
            [(p.tool_request.name, p.tool_request.ref) for p in mine.tool_requests if p.tool_request]
            if mine
            else []
        )
        return calls == asked and {(i.name, i.ref) for i in res.interrupts} <= self._keys(self.forms)

    async def _resume_one(self, form: InterruptForm) -> AgentResponse | None:
        assert self.chat is not None and form.answer is not None
        answer = form.answer
        # every answer goes from the pause itself: the store moves it on from whichever went first
        chat = Chat(self.chat.agent, snapshot_id=self.response.snapshot_id)
        respond = [answer.part] if answer.kind == "respond" else []
        restart = [answer.part] if answer.kind == "restart" else []
        meta = {"answeredBy": self.answered_by} if self.answered_by else None
        text = ""
        bars: dict[tuple[str, str, str], str] = {}
        try:
            turn = chat.resume_stream(respond, restart, meta, partial=True)
            async for chunk in turn:
                text += chunk.text
                mc = chunk.model_chunk
                if mc is not None and mc.role == "tool":
                    self._tools += "".join(part_html(p) for p in mc.content if p.tool_response is not None)
                bars = progress_bars(bars, chunk)
                self.stream.value = self._tools + "".join(bars.values()) + stream_html(text)
            res = await turn.response
        except Exception as exc:  # noqa: BLE001 - shown on its form, which can answer again
            self.stream.value = self._tools
            message = str(exc) if hasattr(exc, "status") else f"{type(exc).__name__}: {exc}"
            form.reset(f"Your answer was not accepted: {message}")
            return None
        self._sent.add(form)
        self.stream.value = self._tools
        if self._same_pause(res):
            said = answer.label[:1].upper() + answer.label[1:]
            form.status.value = _status(
                "ok", "answered", f"{said} · the turn resumes when the last is answered"
            )
            self.header.value = self._waiting_line()
            return res
        if self.result is not None:
            return res  # another answer's task already showed where the turn went
        self.last_resume = ToolResume(
            respond=[
                f.answer.part for f in self.forms if f.answer is not None and f.answer.kind == "respond"
            ],
            restart=[
                f.answer.part for f in self.forms if f.answer is not None and f.answer.kind == "restart"
            ],
            metadata=meta,
        )
        for other in self.forms:
            other.lock()
            other.status.value = ""
        if self.chat.snapshot_id == self.response.snapshot_id:
            _follow(self.chat, chat)  # the chat this view was given goes on from where the turn went
            chat = self.chat
        return self._show_result(res, chat, self._tools)

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
        self.state = "sending"
        self.answered_at = datetime.now(UTC)
        self.header.value = _status("info", "sending", "Sending your answer…")
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

    def retry(self) -> asyncio.Task[AgentResponse | None] | None:
        """Run the last answer once more, after its attempt failed or was stopped (the Retry button)."""
        if self.last_resume is None or (self.task is not None and not self.task.done()):
            return self.task
        self.retry_button.layout.display = "none"
        self.status.value = ""
        self.state = "sending"
        self.header.value = _status("info", "retrying", "Running your answer again…")
        self.task = spawn(self._resume(self.last_resume, retry=True))
        return self.task

    def _offer_retry(self, message: str) -> None:
        self.state = "failed"
        self.header.value = _status("no", "failed", "Your answer ran, and then the turn stopped")
        # the answer took effect: each question shows it, as a record, not as buttons to press again
        records = [widgets.HTML(value=form_record_html(f, "answered")) for f in self.forms]
        self.children = [self.header, self.head, *records, self.status, self.retry_button]
        self.children += (self.continuation, self.footer)
        self.status.value = error_html(None, message) + (
            '<div style="margin:4px 0">Fix what failed (a tool: <code>agent.update_tools(fixed)</code>), '
            "then <b>Retry</b>: your answer runs once more, as a new attempt.</div>"
        )
        self.retry_button.layout.display = ""

    async def _resume(self, resume: ToolResume, *, retry: bool = False) -> AgentResponse | None:
        if not retry and await self._answered_elsewhere():
            return None  # another cell, tab or process answered it: say so, send nothing
        chat = self._resume_chat()
        text, tools = "", ""
        bars: dict[tuple[str, str, str], str] = {}
        try:
            turn = chat.resume_stream(resume.respond, resume.restart, resume.metadata, retry=retry)
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
            message = str(exc) if hasattr(exc, "status") else f"{type(exc).__name__}: {exc}"
            details = getattr(exc, "details", None)
            if isinstance(details, dict) and details.get("retry"):
                self._offer_retry(message)
                return None
            if "already resumed" in str(exc) and await self._answered_elsewhere():
                return None
            self._fail(message)
            return None
        return self._show_result(res, chat, tools)

    def _show_result(self, res: AgentResponse, chat: Chat, tools: str) -> AgentResponse:
        """Show where the answered turn went: stopped, paused again below, or done."""
        self.result = res
        self.status.value = ""
        if res.finish_reason == "aborted":
            self.stream.value = tools
            self._offer_retry("The turn was stopped after your answer began to run.")
            return res
        if res.finish_reason == "interrupted":
            self.stream.value = tools
            self.child = TurnView(
                res,
                chat,
                answered_by=self.answered_by,
                on_settle=lambda _c: self._settle(),
                try_another=self.offers_forks,
            )
            self.continuation.children = [self.stream, self.child]
            self.state = "answered"
            self.outcome = self._outcome_line(repaused=True)
            self.header.value = _status("ok", "answered", self.outcome)
        else:
            self.stream.value = tools + output_html(res.raw, tools=False, box=False, known_tools=self.tools)
            self.outcome = self._outcome_line()
            self._settle()
        return res

    def _outcome_line(self, *, repaused: bool = False) -> str:
        answers = [f.answer for f in self.forms if f.answer is not None]
        verbs = {a.verb for a in answers}
        verb = verbs.pop() if len(verbs) == 1 else "answered"
        done = []
        for form, a in zip(self.forms, answers, strict=False):
            name = form.interrupt.name
            if a.verb == "denied":
                done.append(f"{name} did not run" if a.kind == "respond" else f"{name} was told no")
            elif a.kind == "restart":
                done.append(f"{name} ran" + (" with your changes" if a.changed else ""))
        if repaused:
            done.append("the assistant asks again below")
        return answer_line(verb, by=self.answered_by, at=self.answered_at, outcome=", ".join(done))

    async def _answered_elsewhere(self) -> bool:
        """Whether the audit shows this turn answered already (then collapse to say so)."""
        agent = getattr(self.chat, "agent", None)
        sid, snap = self.response.session_id, self.response.snapshot_id
        if not (sid and snap and hasattr(agent, "audit")):
            return False
        try:
            records = [r for r in await agent.audit(sid) if r.snapshot_id == snap]  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - no audit to read (a store without one): not stale, as far as we know
            return False
        if not records:
            return False
        self.prior = records
        self._mark_stale()
        return True

    def _mark_stale(self) -> None:
        """Collapse to "Already answered (...)": the answer recorded first, not this form's."""
        words = "; ".join(
            f"{r.name}: {record_words(r)}" if len(self.prior) > 1 else record_words(r) for r in self.prior
        )
        self.state = "stale"
        self.outcome = f"Already answered ({words})"
        self.header.value = _status("muted", "answered", self.outcome)
        self.status.value = ""
        for form in self.forms:
            form.lock()
            form.status.value = ""
        self._settle()  # nothing more will come: the forms give way to their questions

    def _fail(self, message: str) -> None:
        self.state = "waiting"
        self.header.value = self._waiting_line()
        self.status.value = error_html(None, f"Your answer was not accepted: {message}")
        for form in self.forms:
            form.reset()

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
        if here and self.state == "done" and self.fork_panel is None and self.offers_forks and can_fork(self):
            self.fork_panel = ForkPanel(self)
        # the cell's record first, before the live view says it is done: a notebook saved
        # from the moment it does keeps the record (a live fork panel: only with the extension)
        if self.displayed and self.fork_panel is not None:
            self.refresh_record()  # it stays live: another answer can be tried
        elif self.displayed:
            self.show_record()
        if here:
            tone = "muted" if self.state == "stale" else "ok"
            word = "answered" if self.state == "stale" else "done"
            self.header.value = _status(tone, word, self.outcome) if self.outcome else ""
            records = [widgets.HTML(value=form_record_html(f, self.state)) for f in self.forms]
            panel = [self.fork_panel] if self.fork_panel is not None else []
            self.children = [
                self.header,
                self.head,
                *records,
                self.status,
                self.continuation,
                *panel,
                self.footer,
            ]
            self.retry_button.layout.display = "none"
        if self.on_settle is not None:
            self.on_settle(self)

    # -- display ---------------------------------------------------------------------------
    def record_html(self) -> str:
        """This turn as a record: status line, questions and answers, the reply (and what followed)."""
        return turn_record_bundle(self)["text/html"]

    def _static_bundle(self) -> dict[str, Any]:
        return turn_record_bundle(self)

    def refresh_record(self) -> None:
        """Update the record in this view's cell output (what a saved notebook shows), keeping the widget."""
        for handle in self.__dict__.get("_nba_handles", []):
            handle.update(self._repr_mimebundle_(), raw=True, metadata=OUTPUT_METADATA)

    def __repr__(self) -> str:
        return f"TurnView({self.response!r}, forms={len(self.forms)}, state={self.state!r})"
