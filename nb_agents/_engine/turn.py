"""One turn of an invocation, as its named steps: check → decide → claim → run → record.

* **check**: what can never run is refused in-band, before anything is claimed
  or run: an answer past its deadline, one the handler's input check refuses
  (Genkit's resume rules, `resume.validate_resume`), an "always" rule without a
  store to keep it in;
* **decide**: for an answer, who decided that each answered call may run: the
  handler's `decision.decide` (the one decision step), on the tools as they are
  now (an MCP server's listed first) and the session's rules as they are now;
* **claim**: an answer to a stored pause takes the pause's exactly-once claim
  (`exactly_once.claim_resume`), with the turn's pending row; a re-sent answer
  replays the outcome of the one that won;
* **run**: the handler runs with a `TurnContext`, while an abort or a detach
  may arrive;
* **record**: the turn's final row, with the audit records and the rules its
  answers made, in one write (`records.write_row`, `audit.turn_audit`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..errors import FailedPreconditionError, NbAgentsError, NotFoundError, StaleClaimError
from ..notify import fire
from ..session import TurnContext, _drop, as_message, last_model
from ..stores.base import ReadAgainError
from ..types import (
    AgentInput,
    AgentOutput,
    AgentStreamChunk,
    FinishReason,
    Message,
    SessionSnapshot,
    SessionState,
    TurnEnd,
    error_info,
)
from . import observe
from .audit import asks_rule
from .exactly_once import Attempt, Moved, claim_resume
from .expiry import check_deadlines
from .heartbeat import pending_row
from .limits import new_id
from .loading import session_of
from .outcome import Aborted, Failed, Outcome, Ran, pause_event
from .ownership import principal_of
from .records import write_row
from .resume import answered_first, resume_digest

if TYPE_CHECKING:
    from .invocation import Invocation

__all__ = ["REPLAY_TIMEOUT", "Turn"]

REPLAY_TIMEOUT = 60.0


class Turn:
    """One turn of `inv` on input `inp`: call it to run its steps; returns the turn's output."""

    def __init__(self, inv: Invocation, inp: AgentInput, index: int) -> None:
        session = inv.session
        assert session is not None
        self.inv = inv
        self.inp = inp
        self.index = index
        self.store = inv.store
        self.snapshot_id = new_id() if self.store is not None else None
        self.before = session.state() if self.store is None else None  # what a failed turn returns
        self.attempt: Attempt | None = None  # the claim the answer runs under
        self.answering = False  # this turn runs a claimed answer (its row names the answer)
        self.decided: dict[tuple[str, str | None], Any] = {}
        self.ctx: TurnContext | None = None
        self.observed = False  # the installed observer runs it (`observe`)

    async def __call__(self) -> AgentOutput:
        inv = self.inv
        watcher = observe.observer
        if watcher is not None and not self.observed:
            self.observed = True
            return await watcher.turn(inv, self.inp, self.index, self)
        if self.inp.message is not None and inv.action == "resume" and not await inv.may_message():
            # a connection opened to answer (an approver may) sends no message into another's session
            assert inv.session is not None
            return self._refused(NotFoundError(f"Session {inv.session.session_id} not found."))
        refused = self.check() or await self.decide() or await self.claim()
        if refused is not None:
            return refused
        return await self.record(await self.run())

    def _refused(self, exc: NbAgentsError) -> AgentOutput:
        session = self.inv.session
        assert session is not None
        return self.inv._output("failed", message=session.last_model(), error=error_info(exc))

    # -- check --------------------------------------------------------------------------
    def check(self) -> AgentOutput | None:
        """Refuse, in-band, what can never run: a failed output, or None to go on."""
        inv, inp = self.inv, self.inp
        session = inv.session
        assert session is not None
        try:
            if inp.resume is not None and not inv.preempted:
                check_deadlines(inp.resume, session.messages)  # a late answer, a forged default
            validate = inv.spec.validate_input
            if validate is not None:
                validate(inp, session)
        except NbAgentsError as exc:
            return self._refused(exc)
        if self.store is None and inp.resume is not None and asks_rule(inp.resume):
            return self._refused(
                FailedPreconditionError(
                    "approve(always=True) makes a per-session rule, which is kept with the session in its "
                    f"store; agent '{inv.spec.name}' has none (client-managed state). Approve this call "
                    "without always=True, or give the agent a store."
                )
            )
        return None

    # -- decide -------------------------------------------------------------------------
    async def decide(self) -> AgentOutput | None:
        """Who decided each answered call may run (the handler's decision step), before the claim."""
        inv, inp = self.inv, self.inp
        decide = inv.spec.decide
        if inp.resume is None or decide is None:
            return None
        session = inv.session
        assert session is not None
        store = self.store
        session_id = session.session_id

        async def stored_rules() -> list[dict[str, Any]]:
            return await store.get_rules(session_id) if store is not None else []

        try:
            self.decided = dict(await decide(inp, session, principal_of(inv.options.context), stored_rules))
        except NbAgentsError as exc:
            return self._refused(exc)
        return None

    # -- claim --------------------------------------------------------------------------
    async def claim(self) -> AgentOutput | None:
        """Claim the pause this turn answers (with a store): None to run, else the output to return."""
        inv, inp = self.inv, self.inp
        store, parent_id, snapshot_id = self.store, inv.parent_id, self.snapshot_id
        if inp.resume is None or store is None or parent_id is None:
            return None
        assert snapshot_id is not None and inv.session is not None
        # the claimed turn is visible (its pending row is written with the claim, and
        # heartbeats) while it runs: if this process dies, the row expires and a later
        # answer can take the claim over
        digest = resume_digest(inp.resume)
        while True:
            pending = pending_row(
                snapshot_id, inv.session.session_id, parent_id, agent=inv.spec.name, owner=inv.owner
            )
            try:
                outcome = await claim_resume(
                    store, parent_id, digest, snapshot_id, timeout=REPLAY_TIMEOUT, pending=pending,
                    retry=bool(inp.retry), partial=bool(inp.partial),
                )  # fmt: skip
            except ReadAgainError:
                # the pause was read from the store's copy, and the row is no longer that: load it
                # again (from the database) and decide on it as it is now
                return await inv._load(inp) or self.check() or await self.decide() or await self.claim()
            if not isinstance(outcome, Moved):
                break
            # another partial answer went first: answer what still waits in the turn it left
            moved = outcome.snapshot
            assert moved.state is not None
            inv.session = session_of(moved, inv.session.session_id)
            parent_id = inv.parent_id = moved.snapshot_id
            taken = answered_first(inp.resume, inv.session.last_model(), parent_id)
            refused = self._refused(taken) if taken is not None else self.check()
            if refused is not None:
                inv.preempted = True  # what this answer answers was answered by the one that went first
                return refused
        if isinstance(outcome, SessionSnapshot):
            return await self._replay(outcome)
        if not isinstance(outcome, Attempt):
            inv.preempted = True
            return self._refused(outcome.error)
        self.attempt, self.answering = outcome, True
        inv.keep_fresh(snapshot_id)  # its pending row went in with the claim
        return None

    async def _replay(self, snap: SessionSnapshot) -> AgentOutput:
        """The result of a resume that already ran (the same answer sent again)."""
        inv = self.inv
        child_id = snap.snapshot_id
        state = snap.state or SessionState()
        finish: FinishReason = "aborted" if snap.status == "aborted" else snap.finish_reason or "stop"
        if snap.status == "completed":
            inv.parent_id = child_id
            if inv.session is not None and snap.state is not None:
                inv.session = session_of(snap, inv.session.session_id)
        await inv._emit(AgentStreamChunk(turn_end=TurnEnd(snapshot_id=child_id, finish_reason=finish)))
        error = snap.error if snap.status == "failed" else None
        out = inv._output(finish, message=last_model(state.messages), snapshot_id=child_id, error=error)
        out._replayed = True
        return out

    # -- run ----------------------------------------------------------------------------
    async def run(self) -> Outcome:
        """Run the handler; an abort cancels it, a detach moves it out of the caller's sight."""
        inv, inp = self.inv, self.inp
        session = inv.session
        assert session is not None
        if inp.message is not None:
            session.messages.append(inp.message)
        ctx = TurnContext(
            session=session,
            emit=inv._emit if inv._on_chunk is not None else _drop,
            streaming=inv.streaming,  # anyone reads the stream: its chunks are built
            abort_signal=inv._abort,
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=inv.parent_id,
            turn_index=self.index,
            options=inv.options,
        )
        if self.attempt is not None:
            ctx.idempotency_base = self.attempt.idempotency_base
        store = self.store
        init = inv.init
        # the first turn of a session it starts (no id came in) has no rules to read: nobody else
        # knows the session's id yet, and no answer of it has made one
        starts = self.index == 0 and not (init.snapshot_id or init.session_id or init.state is not None)
        if store is not None and not starts:
            session_id = session.session_id
            ctx.stored_rules = lambda: store.get_rules(session_id)  # live: read when a decision needs them
        ctx.decided = self.decided
        # a handler that does not report its tools may have acted as soon as it runs
        ctx.tools_started = not inv.spec.tracks_tools
        self.ctx = ctx
        if inp.detach or inv._detach_requested.is_set():
            # the pending row exists before the turn starts, and nothing it emits is streamed
            await inv._go_detached(self.snapshot_id, inv.parent_id)
        if inv._abort.is_set():
            ctx._end()
            return Aborted()  # aborted before it started: nothing runs
        # the handler runs in this task: an abort cancels it here (and only that cancel is
        # taken back), a detach moves the rest of the turn out of the caller's sight
        task = asyncio.current_task()
        assert task is not None
        aborted = False

        def on_abort() -> None:
            nonlocal aborted
            aborted = True
            task.cancel()

        def on_detach() -> None:
            if not inv.detached and inv._detaching is None:
                inv._detaching = asyncio.ensure_future(inv._go_detached(self.snapshot_id, inv.parent_id))

        stop_abort = inv._abort.add_callback(on_abort)
        # a closed invocation takes no more input, so no detach can be asked of it
        stop_detach = inv._detach_requested.add_callback(on_detach) if not inv.closed else None
        try:
            result = await inv.spec.handler(inp, ctx)
        except asyncio.CancelledError:
            if not aborted:
                raise  # the caller was cancelled, not the turn aborted
            result = None
        except Exception as exc:  # noqa: BLE001 - recorded as the turn's failure
            if not aborted:
                return Failed(exc)
        finally:
            ctx._end()
            stop_abort()
            if stop_detach is not None:
                stop_detach()
            if aborted:
                task.uncancel()
            if inv._detaching is not None:
                await inv._detaching
                inv._detaching = None
        if aborted:
            return Aborted()
        reply = result if result is None or isinstance(result, Message) else as_message(result)
        if reply is not None and (not session.messages or session.messages[-1] is not reply):
            session.messages.append(reply)
        return Ran(reply)

    # -- record -------------------------------------------------------------------------
    async def record(self, outcome: Outcome) -> AgentOutput:
        """Write the turn's final row (with a store) and say how it ended."""
        if isinstance(outcome, Aborted):
            return await self._aborted()
        if isinstance(outcome, Failed):
            return await self._failed(outcome.error)
        inv, ctx = self.inv, self.ctx
        assert ctx is not None and inv.session is not None
        snapshot_id, finish = self.snapshot_id, ctx.finish_reason
        if self.store is not None:
            assert snapshot_id is not None
            state = inv.session.state()  # validated: a handler may have put dicts in the session's lists
            written = await write_row(self, "completed", finish, state, None)
            inv.session.messages, inv.session.artifacts = list(state.messages), list(state.artifacts)
            if written == "aborted":  # an abort came just before the row: it is what was recorded
                return await self._recorded_abort()
            if written != "written":
                return self._unrecorded()
            inv.parent_id = snapshot_id
            if finish == "interrupted" and inv.spec.on_pause is not None:
                fire(inv.spec.on_pause, pause_event(inv.spec.name, inv.session, snapshot_id, inv.owner))
        if inv.streaming:  # nobody reads a stream (a JSON request, a chat's send): no chunk to build
            await inv._emit(AgentStreamChunk(turn_end=TurnEnd(snapshot_id=snapshot_id, finish_reason=finish)))
        out = inv._output(finish, message=outcome.reply, snapshot_id=snapshot_id)
        out._timing = observe.timing(ctx)  # in-process, also without a store (`notebook.Timeline`)
        return out

    async def _aborted(self) -> AgentOutput:
        inv, attempt = self.inv, self.attempt
        session = inv.session
        assert session is not None
        acted = self.ctx is not None and self.ctx.tools_started
        if attempt is not None and self.store is not None and not acted:
            # no tool started: the answer was never acted on, so the interrupt is answerable
            # again. Released before the aborted row goes in, so that the same answer sent
            # again at once never reads that row as its outcome; the row is this attempt's
            # own, so it needs no fence any more
            await self.store.release_claim(attempt.parent_id, attempt.child_id)
            self.attempt = None
        if self.store is not None and self.snapshot_id is not None and (inv.detached or attempt is not None):
            # the aborted row keeps the last good state (so it can be resumed) and, for an answer,
            # what its tools did: a re-sent answer is told, and only an explicit retry runs them again
            await write_row(self, "aborted", "aborted", session.state(), None, audited=acted)
            if attempt is not None and acted:  # the row is the answer's recorded outcome
                return await self._recorded_abort()
        await inv._emit(AgentStreamChunk(turn_end=TurnEnd(finish_reason="aborted")))
        return inv._output("aborted", message=session.last_model(), state=self.before)

    async def _recorded_abort(self) -> AgentOutput:
        """The output of a turn whose row says aborted: what a re-sent answer will replay."""
        inv = self.inv
        assert inv.session is not None
        end = TurnEnd(snapshot_id=self.snapshot_id, finish_reason="aborted")
        await inv._emit(AgentStreamChunk(turn_end=end))
        return inv._output("aborted", message=inv.session.last_model(), snapshot_id=self.snapshot_id)

    async def _failed(self, exc: BaseException) -> AgentOutput:
        inv, attempt = self.inv, self.attempt
        session = inv.session
        assert session is not None
        if not isinstance(exc, Exception):
            raise exc
        err = error_info(exc)
        if attempt is not None and self.ctx is not None and self.ctx.tools_started:
            # the answer took effect: sending it again replays this failure; a retry goes on
            details = err.details if isinstance(err.details, dict) else {"cause": err.details}
            err.details = {**details, "retry": True, "attempt": self.snapshot_id}
        elif attempt is not None and self.store is not None:
            # nothing acted (no tool started, or the one that did promised it did nothing): the
            # answer was not acted on, so the interrupt takes an answer again (as after an abort)
            await self.store.release_claim(attempt.parent_id, attempt.child_id)
            self.attempt = None
        if self.store is not None and self.snapshot_id is not None:
            written = await write_row(self, "failed", "failed", session.state(), err)
            if written == "aborted":
                return await self._recorded_abort()
            if written == "stale":
                return self._unrecorded()
        await inv._emit(AgentStreamChunk(turn_end=TurnEnd(finish_reason="failed")))
        return inv._output("failed", message=session.last_model(), state=self.before, error=err)

    def _unrecorded(self) -> AgentOutput:
        """The output of a turn whose final row another worker's takeover fenced out."""
        return self._refused(
            StaleClaimError(
                f"Turn {self.snapshot_id} ran, but another worker took its claim over meanwhile; its result "
                "was dropped. Read the session to see the outcome that was recorded."
            )
        )
