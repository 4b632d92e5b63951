"""One invocation of an agent: init, a stream of inputs, chunks out, one output.

This is Genkit's ``SessionRunner``: it resolves the init into a session, runs
one turn per input (`turn.Turn`: check → decide → claim → run → record),
emits ``turnEnd``, and handles what spans turns: detach (pending snapshot,
heartbeat, background completion), abort (foreground and background), and
the deadlines of a pause the session starts on (`expire`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._json import check_value
from .._made import made
from .._sync import Signal
from ..errors import FailedPreconditionError
from ..nested import merge_answers
from ..session import ChunkSink, Session
from ..stores.base import SessionStore
from ..types import (
    AgentErrorInfo,
    AgentInit,
    AgentInput,
    AgentOutput,
    AgentStreamChunk,
    Artifact,
    CallOptions,
    FinishReason,
    Message,
    SessionSnapshot,
    SessionState,
    error_info,
)
from .expiry import due_parts, expiry_resume, has_deadline
from .heartbeat import begin_watch, pending_row, spawn, watch_event
from .loading import PreTurnFailureError, load_session
from .ownership import Action, visible
from .spec import AgentSpec
from .turn import Turn

__all__ = ["Expired", "Invocation", "expire"]

_NO_OPTIONS = CallOptions()


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
        # whether the caller reads the stream, or only follows the session's changes (a chat's send)
        self.streaming = on_chunk is not None and options.stream
        # the caller's Signal is the turn's; a plain Event from the caller gets one watcher for the
        # whole invocation
        self._abort = abort_signal if isinstance(abort_signal, Signal) else Signal()
        # cancelled when the invocation ends: the watcher of a caller's Event (which may never be
        # set: it leaves no waiter), and the timer that begins watching the last turn's pending row
        # (a turn that ended lets go of it, and of the invocation it holds, at once)
        self._event_watcher: asyncio.Task[None] | None = None
        if abort_signal is not None and abort_signal is not self._abort:
            self._event_watcher = watch_event(abort_signal, self._abort)
        self._begin_watch: asyncio.TimerHandle | None = None
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
        self.action: Action = "message"  # what the first input asked of the session
        self._watching: set[str] = set()
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
        check_value(inp, "data")  # what a store could not write is refused first
        inp = merge_answers(inp)  # a sub-agent's answers: one per call (nb_agents.nested)
        self.closed = True
        try:
            refused = await self._load(inp)
            return refused if refused is not None else await Turn(self, inp, 0)()
        finally:
            self.finished.set()
            for stop in (self._event_watcher, self._begin_watch):
                if stop is not None:
                    stop.cancel()

    # -- feeding ----------------------------------------------------------------
    def send(self, inp: AgentInput) -> None:
        if self.closed or (self._task is not None and self._task.done()):
            raise FailedPreconditionError("this agent invocation has ended; start a new one")
        check_value(inp, "data")  # what a store could not write is refused first
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

    def on_done(self, callback: Callable[[], None]) -> None:
        """Call `callback` once the invocation is over (its output is settled)."""
        self.result.add_done_callback(lambda _: callback())

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
        # an input that also carries a message sends into the session: asked as a message
        answer_only = first is not None and first.resume is not None and first.message is None
        action: Action = "resume" if answer_only else "message"
        self.action = action
        try:
            self.session, self.parent_id, self.owner = await load_session(
                self.spec, self.init, context=self.options.context, action=action
            )
            if not self.expiring and has_deadline(self.session.messages) and due_parts(self.session.messages):
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
                last = await Turn(self, inp, turn_index)()
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
            for stop in (self._event_watcher, self._begin_watch):
                if stop is not None:
                    stop.cancel()

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
        fields: dict[str, Any] = {
            "session_id": session.session_id,
            "message": message,
            "finish_reason": finish_reason,
            "error": error,
            # a handler may have put a plain dict in `session.artifacts` (a public list): read as one
            "artifacts": [
                a if isinstance(a, Artifact) else Artifact.model_validate(a) for a in session.artifacts
            ]
            or None,
        }
        history = None
        if self.store is not None:
            fields["snapshot_id"] = snapshot_id if snapshot_id is not None else self.parent_id
            history = list(session.messages)
        else:
            fields["state"] = state if state is not None else session.state()
            if self.spec.signer is not None:
                fields["state"] = self.spec.signer.sign(fields["state"])
        return made(AgentOutput, fields, _history=history)  # the engine's own values: not validated again

    async def may_message(self) -> bool:
        """Whether the caller, who opened this invocation to answer, may also send messages into it."""
        if self.store is None or self.parent_id is None:
            return True
        snap = await self.store.get_snapshot(self.parent_id)
        return snap is None or visible(
            snap, agent=self.spec.name, context=self.options.context, action="message",
            authorize=self.spec.authorize,
        )  # fmt: skip

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

    async def _start_pending(self, snapshot_id: str, parent_id: str | None) -> None:
        """Write the turn's pending row (once: a claim wrote it with itself) and keep its heartbeat
        fresh."""
        assert self.store is not None
        if snapshot_id in self._watching:
            return
        assert self.session is not None
        pending = pending_row(
            snapshot_id, self.session.session_id, parent_id, agent=self.spec.name, owner=self.owner
        )
        await self.store.save_snapshot(snapshot_id, lambda cur: pending if cur is None else None)
        self.keep_fresh(snapshot_id)

    def keep_fresh(self, snapshot_id: str) -> None:
        """Keep the turn's pending row's heartbeat fresh, and act on an abort saved to it, until the
        invocation is over (no task: `heartbeat.begin_watch`, a poll interval from now)."""
        assert self.store is not None
        self._watching.add(snapshot_id)
        # the turns of an invocation run one at a time: the one before this has ended, and
        # nothing about its row is due (a long connection holds one timer, not one per turn)
        if self._begin_watch is not None:
            self._begin_watch.cancel()
        loop = asyncio.get_running_loop()
        self._begin_watch = loop.call_later(
            self.store.poll_interval,
            begin_watch,
            self.store,
            loop,
            snapshot_id,
            self.finished,
            self._abort.set,
        )


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
