"""One invocation of an agent: init, a stream of inputs, chunks out, one output.

This is Genkit's ``SessionRunner``: it resolves the init into a session,
runs one turn per input, writes a snapshot per turn, emits ``turnEnd``, and
handles detach (pending snapshot, heartbeat, background completion), abort
(foreground and background) and exactly-once resume (a compare-and-swap
claim on the interrupted snapshot before any tool runs).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._sync import Signal
from ..errors import FailedPreconditionError, NbAgentsError, StaleClaimError
from ..nested import merge_answers
from ..session import ChunkSink, Session, TurnContext, as_message, last_model
from ..stores.base import AuditRecord, SessionStore
from ..types import (
    AgentErrorInfo,
    AgentInit,
    AgentInput,
    AgentOutput,
    AgentStreamChunk,
    CallOptions,
    FinishReason,
    Message,
    SessionSnapshot,
    SessionState,
    TurnEnd,
    error_info,
)
from . import observe
from .audit import asks_rule, turn_audit
from .exactly_once import Attempt, Moved, claim_resume
from .expiry import check_deadlines, due_parts, expiry_resume
from .heartbeat import keep_alive, pending_row, spawn, watch_event
from .limits import check_input
from .loading import PreTurnFailureError, load_session, session_of
from .ownership import Action, principal_of
from .records import RowFields, write_final
from .resume import resume_digest
from .spec import AgentSpec

__all__ = ["Expired", "Invocation", "expire", "invoke"]

_NO_OPTIONS = CallOptions()

REPLAY_TIMEOUT = 60.0


class Invocation:
    """A running call of an agent. Feed it with `send`, end input with `close`."""

    def __init__(
        self,
        spec: AgentSpec,
        init: AgentInit,
        *,
        options: CallOptions = _NO_OPTIONS,
        on_chunk: ChunkSink | None = None,
        abort_signal: asyncio.Event | None = None,
        start: bool = True,
    ) -> None:
        self.spec = spec
        self.store: SessionStore | None = spec.store
        self.init = init
        self.options = options
        self._on_chunk = on_chunk
        self._abort = Signal()
        self._event_watcher: asyncio.Task[None] | None = None
        if abort_signal is not None:
            if isinstance(abort_signal, Signal):
                self._abort = abort_signal
            else:  # a plain Event from the caller: one watcher for the whole invocation
                self._event_watcher = watch_event(abort_signal, self._abort)
        self._detach_requested = Signal()
        self._detaching: asyncio.Task[None] | None = None
        self._wants_detach = False
        self._inputs: asyncio.Queue[AgentInput | None] = asyncio.Queue()
        self.result: asyncio.Future[AgentOutput] = asyncio.get_running_loop().create_future()
        self.detached = False
        self.closed = False
        self.finished = asyncio.Event()
        self.session: Session | None = None
        self.parent_id: str | None = None
        self.owner: str | None = None  # the session's principal (recorded on every row it writes)
        self._attempt: Attempt | None = None  # the claim the current resume runs under
        self._answering = False  # the current turn runs a claimed answer (its row names the answer)
        self._ctx: TurnContext | None = None  # the current turn's context
        self._watching: set[str] = set()
        self._current_input: AgentInput | None = None
        self._task: asyncio.Task[None] | None = None
        self.expiring = False  # this invocation applies expired defaults: it never applies them lazily
        # another answer holds the claim on the paused snapshot (it came in time): an answer to an
        # expired pause is then judged by that claim (a re-send or retry of it goes on), not refused
        self.preempted = False
        if start:
            self.start()

    def start(self) -> None:
        """Run the invocation as a task of its own (a connection, a detach)."""
        if self._task is None:
            self._task = spawn(self._main())  # a detached invocation outlives its caller

    async def run_inline(self) -> AgentOutput:
        """Run the queued inputs in the caller's task; a detach moves the rest to a task.

        The fast path of a one-shot call: no task, queue hop or future per turn.
        """
        self.close()
        if self._wants_detach:
            self.start()
            return await asyncio.shield(self.result)
        await self._main()
        return self.result.result()

    async def run_one(self, inp: AgentInput) -> AgentOutput:
        """Run one input that does not detach, in the caller's task: the one-shot call's path."""
        check_input(inp)
        inp = merge_answers(inp)  # a sub-agent's answers: one per call (nb_agents.nested)
        self.closed = True
        try:
            refused = await self._load(inp)
            return refused if refused is not None else await observe.turn(self, inp, 0, self._turn)
        finally:
            self.finished.set()
            if self._event_watcher is not None:
                self._event_watcher.cancel()

    # -- feeding ----------------------------------------------------------------
    def send(self, inp: AgentInput) -> None:
        if self.closed or (self._task is not None and self._task.done()):
            raise FailedPreconditionError("this agent invocation has ended; start a new one")
        check_input(inp)
        inp = merge_answers(inp)  # a sub-agent's answers: one per call (nb_agents.nested)
        if inp.detach and self.store is None:
            raise FailedPreconditionError("Detach is only supported when a session store is provided.")
        if inp.detach:
            self._wants_detach = True
        if inp.detach and inp.message is None and inp.resume is None:
            self._detach_requested.set()
            return
        self._inputs.put_nowait(inp)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._inputs.put_nowait(None)

    def abort(self) -> None:
        """Abort the turn in flight (foreground abort)."""
        self._abort.set()

    async def output(self) -> AgentOutput:
        self.close()
        if self._task is None:
            return await self.run_inline()
        return await asyncio.shield(self.result)

    # -- plumbing ---------------------------------------------------------------
    async def _emit(self, chunk: AgentStreamChunk) -> None:
        if not self.detached and self._on_chunk is not None:
            await self._on_chunk(chunk)

    def _settle(self, out: AgentOutput) -> None:
        if not self.result.done():
            self.result.set_result(out)

    async def _load(self, first: AgentInput | None) -> AgentOutput | None:
        """Resolve the init into the session; a failed output when it cannot be."""
        action: Action = "resume" if first is not None and first.resume is not None else "message"
        try:
            self.session, self.parent_id, self.owner = await load_session(
                self.spec, self.init, context=self.options.context, action=action
            )
            if not self.expiring and due_parts(self.session.messages):
                await self._expire_first(action)
        except PreTurnFailureError as f:
            return AgentOutput(finish_reason="failed", error=error_info(f.error))
        return None

    async def _expire_first(self, action: Action) -> None:
        """The session starts on a pause past its deadline: apply its default before this input.

        A message then goes on from where the default left the conversation; an
        answer stays on the expired pause, where `check_deadlines` refuses it
        (unless an answer given in time holds the pause: then the claim decides).
        """
        if self.store is None or self.parent_id is None:
            return  # client-managed state: nothing is stored to apply it to; a late answer is refused
        snap = await self.store.get_snapshot(self.parent_id)
        if snap is None:
            return
        expired = await expire(self.spec, snap)
        if expired is None:
            return
        self.preempted = expired.preempted
        if action == "resume" or expired.preempted:
            return
        out = expired.output
        if self.init.session_id:
            init = self.init
        elif out.snapshot_id and out.finish_reason not in ("failed", "aborted"):
            init = AgentInit(snapshot_id=out.snapshot_id)
        else:
            return
        self.session, self.parent_id, self.owner = await load_session(
            self.spec, init, context=self.options.context, action=action
        )

    async def _main(self) -> None:
        try:
            # the first input says what the caller wants (a message or a resume), which is
            # what the session's owner and policy are asked about
            inp = await self._inputs.get()
            refused = await self._load(inp)
            if refused is not None:
                self._settle(refused)
                return
            last: AgentOutput | None = None
            turn_index = 0
            while True:
                if inp is None:
                    break
                last = await observe.turn(self, inp, turn_index, self._turn)
                turn_index += 1
                if last.finish_reason in ("failed", "aborted"):
                    break
                inp = await self._inputs.get()
            self._settle(last or self._output("stop", message=None))
        except BaseException as exc:
            if not self.result.done():
                self.result.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            self.closed = True
            self.finished.set()
            if self._event_watcher is not None:
                self._event_watcher.cancel()  # the caller's Event may never be set: leave no waiter

    def _output(
        self,
        finish_reason: FinishReason,
        *,
        message: Message | None,
        snapshot_id: str | None = None,
        state: SessionState | None = None,
        error: AgentErrorInfo | None = None,
    ) -> AgentOutput:
        session = self.session
        assert session is not None
        out = AgentOutput(
            session_id=session.session_id,
            message=message,
            finish_reason=finish_reason,
            error=error,
            artifacts=list(session.artifacts) or None,
        )
        if self.store is not None:
            out.snapshot_id = snapshot_id if snapshot_id is not None else self.parent_id
            out._history = list(session.messages)
        else:
            out.state = state if state is not None else session.state()
            if self.spec.signer is not None:
                out.state = self.spec.signer.sign(out.state)
        return out

    # -- one turn ---------------------------------------------------------------
    async def _turn(self, inp: AgentInput, turn_index: int) -> AgentOutput:
        session, store = self.session, self.store
        assert session is not None
        parent_id = self.parent_id
        snapshot_id = str(uuid.uuid4()) if store is not None else None
        before = session.state() if store is None else None
        self._current_input = inp
        if inp.resume is not None and not self.preempted:
            try:  # a late answer is refused as every refused answer is: in-band, before anything runs
                check_deadlines(inp.resume, session.messages)
            except NbAgentsError as exc:
                return self._output("failed", message=session.last_model(), error=error_info(exc))
        refused = self._check(inp, session)
        if refused is not None:
            return refused
        if store is None and inp.resume is not None and asks_rule(inp.resume):
            err = FailedPreconditionError(
                "approve(always=True) makes a per-session rule, which is kept with the session in its "
                f"store; agent '{self.spec.name}' has none (client-managed state). Approve this call "
                "without always=True, or give the agent a store."
            )
            return self._output("failed", message=session.last_model(), error=error_info(err))
        self._attempt = None
        self._answering = False
        if inp.resume is not None and store is not None and parent_id is not None:
            assert snapshot_id is not None
            # the claimed turn is visible (its pending row is written with the claim, and
            # heartbeats) while it runs: if this process dies, the row expires and a later
            # answer can take the claim over
            digest = resume_digest(inp.resume)
            while True:
                lost = await self._claim(parent_id, digest, snapshot_id, inp)
                if not isinstance(lost, SessionSnapshot):
                    break
                # another partial answer went first: answer what still waits in the turn it left
                assert lost.state is not None
                session = self.session = session_of(lost, session.session_id)
                parent_id = self.parent_id = lost.snapshot_id
                refused = self._check(inp, session)
                if refused is not None:
                    self.preempted = True  # what this answer answers was answered by the one that went first
                    return refused
            if lost is not None:
                return lost
            await self._start_pending(snapshot_id, parent_id, written=True)
        if inp.message is not None:
            session.messages.append(inp.message)
        emit = self._emit
        session._begin_turn(emit)
        ctx = TurnContext(
            session=session,
            emit=emit,
            abort_signal=self._abort,
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent_id,
            turn_index=turn_index,
            options=self.options,
        )
        if self._attempt is not None:
            ctx.idempotency_base = self._attempt.idempotency_base
        if store is not None:
            session_id = session.session_id
            ctx.stored_rules = lambda: store.get_rules(session_id)  # live: read when a decision needs them
        # a handler that does not report its tools may have acted as soon as it runs
        ctx.tools_started = not self.spec.tracks_tools
        self._ctx = ctx
        if inp.detach or self._detach_requested.is_set():
            # the pending row exists before the turn starts, and nothing it emits is streamed
            await self._go_detached(snapshot_id, parent_id)
        task: asyncio.Task[Message | str | None] = asyncio.ensure_future(self.spec.handler(inp, ctx))
        aborted = await self._wait_turn(task, snapshot_id, parent_id)
        if aborted:
            return await self._finish_aborted(inp, snapshot_id, parent_id, before)
        failure = task.exception()
        if failure is not None:
            return await self._finish_failed(failure, snapshot_id, parent_id, before)
        reply = as_message(task.result())
        if reply is not None and (not session.messages or session.messages[-1] is not reply):
            session.messages.append(reply)
        finish = ctx.finish_reason
        if store is not None:
            assert snapshot_id is not None
            audit = self._audit_records(inp, parent_id, snapshot_id)
            written = await self._write_final(
                snapshot_id, parent_id, "completed", finish, session.state(), None, audit
            )
            if written == "aborted":  # an abort came just before the row: it is what was recorded
                return await self._recorded_abort(snapshot_id)
            if written != "written":
                return self._unrecorded(written, snapshot_id)
            self.parent_id = snapshot_id
        await self._emit(AgentStreamChunk(turn_end=TurnEnd(snapshot_id=snapshot_id, finish_reason=finish)))
        out = self._output(finish, message=reply, snapshot_id=snapshot_id)
        out._timing = observe.timing(ctx)  # in-process, also without a store (`notebook.Timeline`)
        return out

    def _check(self, inp: AgentInput, session: Session) -> AgentOutput | None:
        """The handler's check of the input: a failed output if it refuses it."""
        validate = self.spec.validate_input
        if validate is not None:
            try:
                validate(inp, session)
            except NbAgentsError as exc:
                return self._output("failed", message=session.last_model(), error=error_info(exc))
        return None

    async def _wait_turn(
        self, task: asyncio.Task[Any], snapshot_id: str | None, parent_id: str | None
    ) -> bool:
        """Wait for the turn; detach on request; True when it was aborted.

        Abort and detach arrive as signal callbacks, so a turn that is neither
        costs no extra task.
        """
        aborted = False

        def on_abort() -> None:
            nonlocal aborted
            if not task.done():
                aborted = True
                task.cancel()

        def on_detach() -> None:
            if not self.detached and self._detaching is None:
                self._detaching = asyncio.ensure_future(self._go_detached(snapshot_id, parent_id))

        stop_abort = self._abort.add_callback(on_abort)
        stop_detach = self._detach_requested.add_callback(on_detach)
        try:
            await task
        except asyncio.CancelledError:
            if not aborted:
                raise  # we were cancelled ourselves
        except Exception:  # noqa: BLE001 - the caller reads it from task.exception()
            pass
        finally:
            stop_abort()
            stop_detach()
            if self._detaching is not None:
                await self._detaching
                self._detaching = None
        return aborted or task.cancelled()

    async def _finish_aborted(
        self, inp: AgentInput, snapshot_id: str | None, parent_id: str | None, before: SessionState | None
    ) -> AgentOutput:
        session = self.session
        assert session is not None
        attempt = self._attempt
        acted = self._ctx is not None and self._ctx.tools_started
        if attempt is not None and self.store is not None and not acted:
            # no tool started: the answer was never acted on, so the interrupt is answerable
            # again. Released before the aborted row goes in, so that the same answer sent
            # again at once never reads that row as its outcome; the row is this attempt's
            # own, so it needs no fence any more
            await self.store.release_claim(attempt.parent_id, attempt.child_id)
            self._attempt = None
        if self.store is not None and snapshot_id is not None and (self.detached or attempt is not None):
            # the aborted row keeps the last good state (so it can be resumed) and, for an answer,
            # what its tools did: a re-sent answer is told, and only an explicit retry runs them again
            audit = self._audit_records(inp, parent_id, snapshot_id) if acted else []
            await self._write_final(
                snapshot_id, parent_id, "aborted", "aborted", session.state(), None, audit
            )
            if attempt is not None and acted:  # the row is the answer's recorded outcome
                await self._emit(
                    AgentStreamChunk(turn_end=TurnEnd(snapshot_id=snapshot_id, finish_reason="aborted"))
                )
                return self._output("aborted", message=session.last_model(), snapshot_id=snapshot_id)
        await self._emit(AgentStreamChunk(turn_end=TurnEnd(finish_reason="aborted")))
        return self._output("aborted", message=session.last_model(), state=before)

    async def _recorded_abort(self, snapshot_id: str) -> AgentOutput:
        """The output of a turn whose row an abort won: what a re-sent answer will replay."""
        assert self.session is not None
        await self._emit(AgentStreamChunk(turn_end=TurnEnd(snapshot_id=snapshot_id, finish_reason="aborted")))
        return self._output("aborted", message=self.session.last_model(), snapshot_id=snapshot_id)

    async def _finish_failed(
        self, exc: BaseException, snapshot_id: str | None, parent_id: str | None, before: SessionState | None
    ) -> AgentOutput:
        session = self.session
        assert session is not None
        if not isinstance(exc, Exception):
            raise exc
        err = error_info(exc)
        attempt = self._attempt
        if attempt is not None and self._ctx is not None and self._ctx.tools_started:
            # the answer took effect: sending it again replays this failure; a retry goes on
            details = err.details if isinstance(err.details, dict) else {"cause": err.details}
            err.details = {**details, "retry": True, "attempt": snapshot_id}
        elif attempt is not None and self.store is not None:
            # nothing acted (no tool started, or the one that did promised it did nothing): the
            # answer was not acted on, so the interrupt takes an answer again (as after an abort)
            await self.store.release_claim(attempt.parent_id, attempt.child_id)
            self._attempt = None
        if self.store is not None and snapshot_id is not None:
            audit = self._audit_records(self._current_input, parent_id, snapshot_id)
            written = await self._write_final(
                snapshot_id, parent_id, "failed", "failed", session.state(), err, audit
            )
            if written == "aborted":
                return await self._recorded_abort(snapshot_id)
            if written == "stale":
                return self._unrecorded(written, snapshot_id)
        await self._emit(AgentStreamChunk(turn_end=TurnEnd(finish_reason="failed")))
        return self._output("failed", message=session.last_model(), state=before, error=err)

    async def _write_final(
        self,
        snapshot_id: str,
        parent_id: str | None,
        status: str,
        finish: FinishReason,
        state: SessionState,
        error: AgentErrorInfo | None,
        audit: Sequence[AuditRecord] = (),
    ) -> str:
        """Write the turn's row (and `audit`, the answers it ran on, in the same transaction).

        Returns what `records.write_final` says: written, aborted, stale (fenced out); raises
        the store's error when it refuses the row.
        """
        assert self.store is not None and self.session is not None
        fields: RowFields = {
            "session_id": self.session.session_id,
            "parent_id": parent_id,
            "agent": self.spec.name,
            "owner": self.owner,
        }
        runs = self._ctx.tool_runs if self._ctx is not None else []
        attempt = self._attempt
        # kept unless the row completes (an abort that wins over the completion keeps them)
        if runs:
            fields["tool_runs"] = list(runs)
        fields["timing"] = observe.timing(self._ctx)  # when it ran, and its steps (`notebook.Timeline`)
        inp = self._current_input
        if self._answering and inp is not None and inp.resume is not None:
            # what an explicit retry sends again; and the mark of an answer's row, so that an answer
            # given through it is claimed on the pause it answered (`loading.answered_pause`)
            fields["answer"] = inp.resume.to_wire()
        return await write_final(
            self.store,
            snapshot_id,
            fields,
            status=status,
            finish=finish,
            state=state,
            error=error,
            audit=audit,
            fence=attempt.fence if attempt is not None and attempt.child_id == snapshot_id else None,
            # the rules the turn's answers made are kept when its answers are recorded
            add_rules=self._ctx.new_rules if self._ctx is not None and audit else (),
        )

    def _unrecorded(self, written: str, snapshot_id: str) -> AgentOutput:
        """The output of a turn whose final row did not go in as it was."""
        assert self.session is not None and written == "stale"
        err = StaleClaimError(
            f"Turn {snapshot_id} ran, but another worker took its claim over meanwhile; its result "
            "was dropped. Read the session to see the outcome that was recorded."
        )
        return self._output("failed", message=self.session.last_model(), error=error_info(err))

    def _audit_records(self, inp: AgentInput | None, parent_id: str | None, child: str) -> list[AuditRecord]:
        """The turn's audit: the answers it ran on, what rules and policy decided, the rules it made."""
        session, ctx = self.session, self._ctx
        resume = inp.resume if inp is not None and parent_id is not None else None
        decisions = ctx.decisions if ctx is not None else []
        new_rules = ctx.new_rules if ctx is not None else []
        if session is None or not (resume is not None or decisions or new_rules):
            return []  # the common turn: nothing to record, and no clock read for it
        return turn_audit(
            session.session_id,
            resume,
            parent_id,
            child,
            principal=principal_of(self.options.context),
            decisions=decisions,
            new_rules=new_rules,
        )

    async def _claim(
        self, parent_id: str, digest: str, child_id: str, inp: AgentInput
    ) -> AgentOutput | SessionSnapshot | None:
        """Claim the resume of `parent_id` (with the turn's pending row): None if won, else its
        output, or the snapshot to go on from (a partial answer that another one preceded)."""
        assert self.store is not None and self.session is not None
        pending = pending_row(
            child_id, self.session.session_id, parent_id, agent=self.spec.name, owner=self.owner
        )
        outcome = await claim_resume(
            self.store,
            parent_id,
            digest,
            child_id,
            timeout=REPLAY_TIMEOUT,
            pending=pending,
            retry=bool(inp.retry),
            partial=bool(inp.partial),
        )
        if isinstance(outcome, Moved):
            return outcome.snapshot
        if isinstance(outcome, Attempt):
            self._attempt = outcome
            self._answering = True
            return None
        if isinstance(outcome, SessionSnapshot):
            return await self._replay(outcome)
        self.preempted = True
        return self._output("failed", message=self.session.last_model(), error=error_info(outcome.error))

    async def _replay(self, snap: SessionSnapshot) -> AgentOutput:
        """The result of a resume that already ran (the same answer sent again)."""
        child_id = snap.snapshot_id
        state = snap.state or SessionState()
        message = last_model(state.messages)
        finish: FinishReason = "aborted" if snap.status == "aborted" else snap.finish_reason or "stop"
        if snap.status == "completed":
            self.parent_id = child_id
            if self.session is not None and snap.state is not None:
                self.session = session_of(snap, self.session.session_id)
        await self._emit(AgentStreamChunk(turn_end=TurnEnd(snapshot_id=child_id, finish_reason=finish)))
        error = snap.error if snap.status == "failed" else None
        return self._output(finish, message=message, snapshot_id=child_id, error=error)

    # -- detach -----------------------------------------------------------------
    async def _go_detached(self, snapshot_id: str | None, parent_id: str | None) -> None:
        if self.detached:
            return
        assert self.store is not None and snapshot_id is not None and self.session is not None
        self.detached = True  # first: from here on nothing reaches the caller's stream
        await self._start_pending(snapshot_id, parent_id)
        self._settle(
            AgentOutput(session_id=self.session.session_id, snapshot_id=snapshot_id, finish_reason="detached")
        )

    async def _start_pending(self, snapshot_id: str, parent_id: str | None, *, written: bool = False) -> None:
        """Write the turn's pending row (once; a claim has `written` it) and keep its heartbeat fresh."""
        assert self.store is not None
        if snapshot_id in self._watching:
            return
        self._watching.add(snapshot_id)
        if not written:
            assert self.session is not None
            pending = pending_row(
                snapshot_id, self.session.session_id, parent_id, agent=self.spec.name, owner=self.owner
            )
            await self.store.save_snapshot(snapshot_id, lambda cur: pending if cur is None else None)
        spawn(keep_alive(self.store, snapshot_id, done=self.finished, on_abort=self._abort.set))


async def invoke(
    spec: AgentSpec,
    inp: AgentInput,
    init: AgentInit,
    *,
    options: CallOptions = _NO_OPTIONS,
    on_chunk: ChunkSink | None = None,
    abort_signal: asyncio.Event | None = None,
) -> AgentOutput:
    """Run one input as a one-shot invocation, in the caller's task."""
    inv = Invocation(spec, init, options=options, on_chunk=on_chunk, abort_signal=abort_signal, start=False)
    if not inp.detach:
        return await inv.run_one(inp)
    inv.send(inp)  # a detach goes on in a task of its own
    return await inv.run_inline()


@dataclass(frozen=True, slots=True)
class Expired:
    """What applying a pause's default came to.

    Attributes:
        output: The turn the default ran (or, replayed, the one another process ran).
        preempted: Another answer holds the pause (it came before the deadline): the default did not apply.
    """

    output: AgentOutput
    preempted: bool


async def expire(spec: AgentSpec, snap: SessionSnapshot) -> Expired | None:
    """Apply the declared defaults of `snap`'s expired pauses, once across processes; None if none is due.

    The defaults are an ordinary answer (`expiry_resume`), claimed and run as a
    person's would be: of several processes that notice at once, one runs the
    turn and the others get its outcome. Only a paused turn (a completed
    snapshot that ended ``interrupted``) expires.
    """
    if snap.status not in (None, "completed") or snap.finish_reason != "interrupted" or snap.state is None:
        return None
    resume = expiry_resume(snap.state.messages)
    if resume is None:
        return None
    inv = Invocation(spec, AgentInit(snapshot_id=snap.snapshot_id), start=False)
    inv.expiring = True
    # partial: pauses not yet due stay paused; and if another partial answer moved the turn on,
    # the defaults apply to the turn it left paused
    out = await inv.run_one(AgentInput(resume=resume, partial=True))
    return Expired(out, inv.preempted)
