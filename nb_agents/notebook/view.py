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

from .._sync import start as spawn
from ..chat import Chat
from ..errors import AlreadyResumedError, NbAgentsError
from ..nested import tool_for
from ..render import error_html, output_html, tools_of
from ..responses import AgentResponse
from ..stores.base import AuditRecord
from ..tools import Tool
from ..types import ToolResume
from ._bundle import WithStaticFallback
from .controls import button
from .elicitation import ElicitationForm, is_elicitation
from .expiring import answers_to, expire_now, is_expiry_error, watch_deadlines
from .forking import ForkPanel
from .forms import InterruptForm
from .identity import local_user
from .outcomes import outcome_line
from .partial import call_keys, replayed, resume_one, show_elsewhere, waiting_line
from .partial import status as _status
from .records import form_record_html
from .settling import Settling
from .streaming import LiveOutput
from .watch import recheck, watch

__all__ = ["TurnView", "agent_tools"]


def agent_tools(chat: Chat | None) -> dict[str, Tool]:
    """The tools of a chat's agent by name; empty when unknown (a remote agent)."""
    return {k: v for k, v in tools_of(chat).items() if isinstance(v, Tool)}


_QUESTION = "3px solid var(--jp-border-color2, #ccc)"  # each question of a turn in its own block


class TurnView(Settling, WithStaticFallback, widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """The widget for one turn: forms for its interrupts, the continuation below.

    Args:
        response: The turn to show.
        chat: The chat that resumes it (default: ``response.chat``).
        answered_by: Who answers, recorded in the audit trail (``resume.metadata.answeredBy``).
        on_settle: Called with the view once its turn is finished (see the module docstring).
        try_another: Offer "Try another answer" once the turn is finished (a view displayed
            in a cell then stays live, and a saved notebook keeps its record only through the
            server extension). Default: only inside a live widget, such as a `ChatWidget`.
        moves_chat: When the question is answered elsewhere (another cell, the `Inbox`, an
            answer link), move `chat` to where that answer went, if it still stands at this
            pause, so its next ``send`` goes on from there (a `ChatWidget` does it itself).

    Attributes:
        forms: One `InterruptForm` per interrupt.
        task: The running (or finished) resume task; await it in tests.
        last_resume: The `ToolResume` last sent.
        result: The continuation's `AgentResponse` once it arrived.
        child: The nested `TurnView` when the continuation paused again.
        state: ``"waiting"``, ``"sending"``, ``"answered"`` (paused again below),
            ``"done"``, or ``"stale"`` (answered elsewhere).
        following: The task moving `chat` once answered elsewhere (see ``moves_chat``).
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
        moves_chat: bool = True,
    ):
        super().__init__()
        self.response = response
        self.chat: Chat | None = chat if chat is not None else response.chat
        self.you = answered_by is None  # the person at this notebook: "you" in words, the user in the audit
        self.answered_by = answered_by if answered_by is not None else local_user()
        self.on_settle = on_settle
        self.try_another = try_another
        self.moves_chat = moves_chat
        self.following: asyncio.Task[None] | None = None  # `move_chat`, once answered elsewhere
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
        self.went: str | None = None  # without an audit: the turn the answer that went first ran
        self.answered_at: datetime | None = None
        self.fork_panel: ForkPanel | None = None  # "Try another answer", once the turn is done
        self.fork_of: TurnView | None = None  # the answered view this one is a fork of
        self.deadline_task: asyncio.Task[None] | None = None  # applies a deadline's default on time
        self.checking: asyncio.Task[bool] | None = None  # a re-read of the audit after a cell ran
        self._sent: set[Any] = set()  # the forms whose answers took effect (partial answers)
        self._tools = ""  # the tool rows streamed so far by the partial answers
        self.header = widgets.HTML(value=self._waiting_line())
        self.head = widgets.HTML(
            value=output_html(response.raw, interrupts=False, status=False, box=False, ids=False)
        )
        self.footer = widgets.HTML()  # ids stay out of the view (they are on the response)
        self.status = widgets.HTML()
        # an answer that took effect and then failed (or was stopped) is not answered again:
        # it is retried, as a new attempt that the audit records
        self.retry_button = button("Retry", "warning")
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
        if len(self.forms) > 1:  # a status under a question must read as that question's
            for form in self.forms:
                form.layout = widgets.Layout(
                    border_left=_QUESTION, padding="0 0 0 10px", margin="6px 0 10px 0"
                )
        watch_deadlines(self)
        watch(self)

    def _waiting_line(self) -> str:
        return waiting_line(self)

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
        self.task = spawn(resume_one(self, form))
        return self.task

    def _show(self, html: str) -> None:
        self.stream.value = html

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
        # sent at once: the claim decides whether it runs. Answered elsewhere meanwhile (another
        # cell, tab or process), a different answer is refused and the same one replays what the
        # first came to; either way nothing runs again, and only then is the audit read, to say
        # who answered
        chat = self._resume_chat()
        live = LiveOutput(self._show)
        try:
            res = await live.follow(
                chat.resume_stream(resume.respond, resume.restart, resume.metadata, retry=retry)
            )
        except Exception as exc:  # noqa: BLE001 - shown in the widget, where the user can act on it
            self.stream.value = ""
            if replayed(exc) and not retry and await self._answered_elsewhere():
                return None  # the same answer, sent elsewhere before, failed there: say who sent it
            message = str(exc) if isinstance(exc, NbAgentsError) else f"{type(exc).__name__}: {exc}"
            details = exc.details if isinstance(exc, NbAgentsError) else None
            if isinstance(details, dict) and details.get("retry"):
                self._offer_retry(message)
                return None
            if isinstance(exc, AlreadyResumedError) and await self._taken_elsewhere(exc):
                return None
            if is_expiry_error(exc) and await expire_now(self, late=True):
                return None  # too late: the form shows what the default did instead
            self._fail(message)
            return None
        if replayed(res) and not retry and await self._answered_elsewhere():
            return None
        return self._show_result(res, chat, live.tools)

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
                moves_chat=self.moves_chat,
            )
            self.continuation.children = [self.stream, self.child]
            self.state = "answered"
            self.outcome = self._outcome_line(repaused=True)
            self.header.value = _status("ok", "answered", self.outcome)
        else:
            self.stream.value = tools + output_html(
                res.raw, tools=False, box=False, known_tools=self.tools, ids=False
            )
            self.outcome = self._outcome_line()
            self._settle()
        return res

    def _outcome_line(self, *, repaused: bool = False) -> str:
        return outcome_line(self, repaused=repaused)

    async def _answered_elsewhere(
        self, *, expect: str = "sending", found: list[AuditRecord] | None = None
    ) -> bool:
        """Whether the audit shows this turn answered already (then collapse to say so).

        `expect`: the state the view must still be in once the audit is read (else it moved on);
        `found`: the audit's answers to this view's calls, when already read (`answers_to`).
        """
        mine = call_keys(list(self._sent))  # this view's own partial answers are not "elsewhere"
        found = await answers_to(self) if found is None else found
        records = [r for r in found if (r.name, r.ref) not in mine]
        if self.state != expect or not records:
            return False
        if {(r.name, r.ref) for r in records} < call_keys(self.forms) - mine:
            if self.partial:  # each form answers alone: those answered elsewhere say so, the rest wait
                by_call = {(r.name, r.ref): r for r in records if r.kind != "expired"}
                for form in self.forms:
                    record = by_call.get((form.interrupt.name, form.interrupt.ref))
                    if record is not None and form.elsewhere is None and form not in self._sent:
                        show_elsewhere(self, form, record)
            return False
        if any(r.kind == "expired" for r in records):
            return await expire_now(self, late=expect == "sending")
        self.prior = records
        self._mark_stale()
        return True

    async def _taken_elsewhere(self, exc: AlreadyResumedError) -> bool:
        """The pause was taken by another answer: collapse, saying who when the audit tells."""
        found = await answers_to(self)  # read once, for both questions below
        if await self._answered_elsewhere(found=found):
            return True
        if exc.by is None or self.state != "sending" or found:
            return False  # the audit knows of answers to some of these calls only: not all were taken
        # no one to name (a remote agent has no audit here, or the first answer's turn still runs)
        self.went = exc.by
        self._mark_stale()
        return True

    def recheck(self) -> asyncio.Task[bool] | None:
        """Re-read what became of this turn's question (after each cell: `watch.recheck`)."""
        return recheck(self)

    def _fail(self, message: str) -> None:
        self.state = "waiting"
        self.header.value = self._waiting_line()
        self.status.value = error_html(None, f"Your answer was not accepted: {message}")
        for form in self.forms:
            form.reset()

    def __repr__(self) -> str:
        return f"TurnView({self.response!r}, forms={len(self.forms)}, state={self.state!r})"
