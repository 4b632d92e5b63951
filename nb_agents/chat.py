"""The chat API: a conversation object that tracks its own session.

`Chat` drives any agent (`nb_agents.protocol.BaseAgent`, local or remote)
through its verbs (``invoke`` one input, ``get_snapshot``, ``abort``, ...).
`Chat.send` runs one turn and returns an `AgentResponse`; its
``interrupts`` are `AgentInterrupt` builders whose parts go back through
`Chat.resume`. The chat remembers the snapshot id (server-managed agents) or
the state blob (client-managed ones), so the next call continues where the
last one ended, the way Genkit's ``remoteAgent`` does. A turn that ends
``failed`` raises `AgentError` and leaves the chat where it was, so a
rejected answer can be corrected and sent again.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._sync import Signal, twin
from .errors import AgentError, AlreadyResumedError, FailedPreconditionError, strip_status_prefix
from .inputs import InputLike, as_input, call_options, make_init
from .interrupts import AgentInterrupt
from .responses import AgentChunk, AgentResponse, LatestResponse
from .turns import DONE, AgentTurn, DetachedTask, SyncAgentTurn, sync_turn
from .types import (
    AgentInit,
    AgentInput,
    AgentOutput,
    AgentStreamChunk,
    Artifact,
    CallOptions,
    Message,
    Part,
    SessionSnapshot,
    SessionState,
    ToolResume,
)

__all__ = [
    "AgentChunk",
    "AgentInterrupt",
    "AgentResponse",
    "AgentTurn",
    "Chat",
    "DetachedTask",
    "InputLike",
    "SyncAgentTurn",
    "as_input",
    "call_options",
    "make_init",
]


if TYPE_CHECKING:
    from .protocol import BaseAgent as AgentEndpoint  # what a Chat drives: any agent, local or remote
    from .rules import SessionRule, SessionRules


class Chat:
    """A conversation with an agent (local or remote) that tracks its session.

    Create it with ``agent.chat()`` (optionally ``snapshot_id=``,
    ``session_id=`` or ``state=``). Every async verb has a ``_sync`` twin.

    Example:
        >>> chat = agent.chat()                                          # doctest: +SKIP
        >>> res = chat.send_sync("Transfer $500 to savings")             # doctest: +SKIP
        >>> res = chat.resume_sync(respond=[res.interrupts[0].respond({"approved": True})])  # doctest: +SKIP
    """

    last = LatestResponse()  # the latest turn's response (None before one), held weakly

    def __init__(
        self,
        agent: AgentEndpoint,
        *,
        snapshot_id: str | None = None,
        session_id: str | None = None,
        state: SessionState | dict[str, Any] | None = None,
    ) -> None:
        self.agent = agent
        self.snapshot_id = snapshot_id
        self.session_id = session_id
        self._state = SessionState.model_validate(state) if isinstance(state, dict) else state
        self.custom: Any = self._state.custom if self._state is not None else None
        self.messages: list[Message] = list(self._state.messages) if self._state is not None else []
        self.artifacts: list[Artifact] = list(self._state.artifacts) if self._state is not None else []
        self._abort_current: Signal | None = None  # the turn in flight, for abort()
        self._last_resume: ToolResume | None = None  # what `retry` sends again

    @classmethod
    def at(cls, agent: AgentEndpoint, snap: SessionSnapshot, *, paused: bool = False) -> Chat:
        """A chat on a stored snapshot: its history, custom state and artifacts (`paused`: it asks)."""
        state = snap.state.model_copy(deep=True) if snap.state is not None else None  # the chat's own
        session_id = snap.session_id or (state.session_id if state is not None else None)
        chat = cls(agent, snapshot_id=snap.snapshot_id, session_id=session_id)
        if state is not None:
            chat.messages, chat.custom = list(state.messages), state.custom
            chat.artifacts = list(state.artifacts)
            if paused:
                out = AgentOutput(
                    message=state.messages[-1], finish_reason="interrupted",
                    snapshot_id=snap.snapshot_id, session_id=session_id,
                )  # fmt: skip
                last = AgentResponse(out, custom=state.custom, chat=chat)
                last.messages = list(chat.messages)
                chat.last = last
        return chat

    @property
    def state(self) -> SessionState | None:
        """The state blob the next turn sends (client-managed agents)."""
        return self._state

    async def _run(
        self, inp: AgentInput, options: CallOptions, queue: asyncio.Queue[object] | None, abort: Signal
    ) -> AgentResponse:
        """Run one turn; chunks go to `queue` (None: nobody streams, only patches count)."""
        self._abort_current = abort
        if queue is None:  # the turn need not build what only a stream shows (`CallOptions.stream`)
            options = CallOptions(options.config, options.context, stream=False)
        text = ""
        custom = copy.deepcopy(self.custom)
        tools_ran = inp.resume is not None  # the history holds more than the reply: read it back

        async def on_chunk(raw: AgentStreamChunk) -> None:
            nonlocal text, custom, tools_ran
            chunk_custom = None
            if raw.model_chunk is not None:
                if raw.model_chunk.role != "tool":
                    text += raw.model_chunk.text
                else:
                    tools_ran = True
            if raw.custom_patch is not None:
                import jsonpatch  # only custom agents patch state: keep it off the import path

                custom = jsonpatch.apply_patch(custom if custom is not None else {}, raw.custom_patch)
                chunk_custom = custom
            if queue is not None:
                await queue.put(AgentChunk(raw, accumulated_text=text, custom=chunk_custom))

        # where the turn goes on from: the snapshot, else the state blob, else the session
        if self.snapshot_id:
            init = AgentInit(snapshot_id=self.snapshot_id)
        elif self._state is not None:
            init = AgentInit(state=self._state)
        else:
            init = AgentInit(session_id=self.session_id) if self.session_id else AgentInit()
        try:
            out = await self.agent.invoke(inp, init, options=options, on_chunk=on_chunk, abort_signal=abort)
        finally:
            self._abort_current = None
            if queue is not None:
                await queue.put(DONE)
        history = out.__pydantic_private__["_history"]  # a private attribute at a dict's cost
        if tools_ran and out.state is None and history is None and out.snapshot_id:
            out._history = await self._stored_history(out)
        return self._absorb(inp, out, custom)

    async def _stored_history(self, out: AgentOutput) -> list[Message] | None:
        """A remote server-managed turn's history, read back (its output carries only the reply)."""
        if out.finish_reason not in ("stop", "interrupted", "length", "other", "unknown", "blocked"):
            return None
        try:
            snap = await self.agent.get_snapshot(out.snapshot_id)
        except Exception:  # noqa: BLE001 - a server without getSnapshot: keep the reply-only history
            return None
        return list(snap.state.messages) if snap is not None and snap.state is not None else None

    def _absorb(self, inp: AgentInput, out: AgentOutput, custom: Any) -> AgentResponse:
        res = AgentResponse(out, custom=custom, chat=self)
        if out.finish_reason == "failed":
            err = out.error
            res.messages = list(self.messages)  # the chat is where it was before the turn
            already = err is not None and isinstance(err.details, dict) and "alreadyResumed" in err.details
            raise (AlreadyResumedError if already else AgentError)(
                # the bare message: a Genkit server writes "STATUS: message", AgentError adds the status
                strip_status_prefix(err.status, err.message) if err is not None else "the turn failed",
                status=err.status if err is not None else None,
                details=err.details if err is not None else None,
                response=res,
            )
        if out.finish_reason != "aborted":
            # an aborted turn's row (if it has one) is not where the chat goes on from: the
            # chat stays where it was, so that a retry sends the answer to the same pause
            self.snapshot_id = out.snapshot_id or self.snapshot_id
        self.session_id = out.session_id or self.session_id
        if out.finish_reason == "detached":
            res.messages = list(self.messages)
            return res
        if out.state is not None:
            self._state = out.state
            self.messages = list(out.state.messages)
            self.artifacts = list(out.state.artifacts)
            self.custom = out.state.custom
        else:
            if out.finish_reason == "aborted":
                pass  # an aborted turn changed nothing the chat continues from
            elif (history := out.__pydantic_private__["_history"]) is not None:
                self.messages = list(history)  # the stored history, tool rounds included
            else:
                if inp.message is not None:
                    self.messages.append(inp.message)
                if out.message is not None:
                    self.messages.append(out.message)
            self.custom = custom
            for art in out.artifacts or []:
                self._upsert(art)
        res.messages = list(self.messages)
        self.last = res
        return res

    def _upsert(self, art: Artifact) -> None:
        for i, old in enumerate(self.artifacts):
            if art.name is not None and old.name == art.name:
                self.artifacts[i] = art
                return
        self.artifacts.append(art)

    # -- verbs ----------------------------------------------------------------------
    # `config` (model settings such as temperature) applies to this call only, over the
    # agent's; `context` is the request context tools and handlers read as `ctx.context`.
    def send_stream(
        self, input: InputLike, *, config: dict[str, Any] | None = None, context: dict[str, Any] | None = None
    ) -> AgentTurn:
        """Start a turn and stream it; see `AgentTurn`."""
        return AgentTurn(self, as_input(input), call_options(config, context))

    async def send(
        self, input: InputLike, *, config: dict[str, Any] | None = None, context: dict[str, Any] | None = None
    ) -> AgentResponse:
        """Run one turn and return its response (raises `AgentError` if it failed)."""
        # no stream to feed: run in this task, without AgentTurn's task and queue
        return await self._run(as_input(input), call_options(config, context), None, Signal())

    def resume_stream(
        self,
        respond: Sequence[Part] = (),
        restart: Sequence[Part] = (),
        metadata: Any = None,
        *,
        retry: bool = False,
        partial: bool = False,
        config: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
    ) -> AgentTurn:
        """Answer the paused turn and stream the continuation (see `resume`)."""
        return AgentTurn(
            self,
            self._resume_input(respond, restart, metadata, retry, partial),
            call_options(config, context),
        )

    async def resume(
        self,
        respond: Sequence[Part] = (),
        restart: Sequence[Part] = (),
        metadata: Any = None,
        *,
        retry: bool = False,
        partial: bool = False,
        config: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
    ) -> AgentResponse:
        """Answer the paused turn: `respond` parts supply outputs, `restart`
        parts re-run tools. Both lists may be used at once.

        Every interrupt must be answered (Genkit's rule), unless ``partial=True``:
        then the answered ones take effect now (a restarted tool runs) and the
        turn stays paused on the rest; answers to different interrupts of one
        turn may arrive at once, from anywhere, and each takes effect once.

        An answer takes effect once: sent again, it returns the first outcome,
        also when that attempt failed or was aborted after its tools started.
        ``retry=True`` (with the same answer) runs one more attempt instead; tools
        see the same ``ctx.idempotency_key`` in every attempt. `retry` is the short way.
        """
        inp = self._resume_input(respond, restart, metadata, retry, partial)
        return await self._run(inp, call_options(config, context), None, Signal())

    async def retry(
        self, *, config: dict[str, Any] | None = None, context: dict[str, Any] | None = None
    ) -> AgentResponse:
        """Run the last answer once more, after its attempt failed or was aborted (an audited new attempt)."""
        if self._last_resume is None:
            raise FailedPreconditionError("this chat has sent no answer to retry; use resume() first")
        inp = AgentInput(resume=self._last_resume, retry=True)
        return await self._run(inp, call_options(config, context), None, Signal())

    def _resume_input(
        self,
        respond: Sequence[Part],
        restart: Sequence[Part],
        metadata: Any,
        retry: bool,
        partial: bool = False,
    ) -> AgentInput:
        resume = ToolResume(respond=list(respond), restart=list(restart), metadata=metadata)
        self._last_resume = resume
        inp = AgentInput(resume=resume)
        if retry:
            inp.retry = True
        if partial:
            inp.partial = True
        return inp

    async def detach(
        self, input: InputLike, *, config: dict[str, Any] | None = None, context: dict[str, Any] | None = None
    ) -> DetachedTask:
        """Start a turn that goes on in the background; returns a `DetachedTask`."""
        inp = as_input(input).model_copy(update={"detach": True})
        res = await self._run(inp, call_options(config, context), None, Signal())
        assert res.snapshot_id is not None
        return DetachedTask(self.agent, res.snapshot_id)

    async def abort(self) -> str | None:
        """Abort the turn in flight, or the chat's pending snapshot."""
        if self._abort_current is not None:
            self._abort_current.set()  # thread-safe: the turn may run on another loop
            return "pending"
        if self.snapshot_id:
            return await self.agent.abort(self.snapshot_id)
        return None

    # -- per-session approval rules --------------------------------------------------
    def _session(self, verb: str) -> str:
        if not self.session_id:
            raise FailedPreconditionError(f"chat.{verb}() needs a session: send a message first")
        return self.session_id

    async def rules(self) -> SessionRules:
        """This conversation's approval rules (`Agent.rules`): what ``approve(always=True)`` made."""
        return await self.agent.rules(self._session("rules"))

    async def revoke_rule(self, rule_id: str) -> SessionRule:
        """Revoke one of this conversation's approval rules (`Agent.revoke_rule`)."""
        return await self.agent.revoke_rule(self._session("revoke_rule"), rule_id)

    # -- forks ----------------------------------------------------------------------
    async def fork(self, *, key: str | None = None, context: dict[str, Any] | None = None) -> Chat:
        """A new chat on a copy of this chat's paused turn, to answer it differently.

        A paused turn's answer takes effect once, so a fork copies the pause into
        a session of its own (`Agent.fork`): answer each chat its own way; each
        branch runs its tools once. The same `key` from the same pause is the
        same fork. With client-managed state the fork is a chat on a copy of
        the state blob.

        Raises:
            FailedPreconditionError: The chat's latest turn is not paused, or its
                agent cannot fork (a remote agent).

        Example:
            >>> res = await chat.send("Transfer $500")                  # doctest: +SKIP
            >>> other = await chat.fork()                                # doctest: +SKIP
            >>> await chat.resume(restart=[res.interrupts[0].approve()])  # doctest: +SKIP
            >>> no = other.last.interrupts[0].respond({"approved": False})  # doctest: +SKIP
            >>> await other.resume(respond=[no])                          # doctest: +SKIP
        """
        if self._state is not None and not self.snapshot_id:
            msgs = self._state.messages
            if not (msgs and msgs[-1].role == "model" and msgs[-1].interrupts()):
                raise FailedPreconditionError("Cannot fork this chat: its latest turn is not paused.")
            copied = Chat(self.agent, state=self._state.model_copy(deep=True))
            copied.last = self.last
            return copied
        if not self.snapshot_id and not self.session_id:
            raise FailedPreconditionError("Cannot fork this chat: it has no turn yet (send a message first).")
        if self.snapshot_id:
            return await self.agent.fork(self.snapshot_id, key=key, context=context)
        return await self.agent.fork(session_id=self.session_id, key=key, context=context)

    async def forks(self, *, context: dict[str, Any] | None = None) -> list[SessionSnapshot]:
        """The forks made from this chat's session: each fork's first row, oldest first (see `fork`)."""
        session_id = self.session_id
        if not session_id and self.snapshot_id:
            snap = await self.agent.get_snapshot(self.snapshot_id, context=context)
            session_id = snap.session_id if snap is not None else None
        if not session_id:
            return []
        return await self.agent.forks(session_id, context=context)

    # -- sync twins ------------------------------------------------------------------
    send_sync = twin(send)
    resume_sync = twin(resume)
    retry_sync = twin(retry)
    detach_sync = twin(detach)
    abort_sync = twin(abort)
    rules_sync = twin(rules)
    revoke_rule_sync = twin(revoke_rule)
    fork_sync = twin(fork)
    forks_sync = twin(forks)

    send_stream_sync = sync_turn(send_stream)
    resume_stream_sync = sync_turn(resume_stream)
