"""`Agent`: a named turn handler plus an optional store, and its APIs.

`define_agent` builds a prompt agent (a model with tools, Genkit's
``defineAgent``); `define_custom_agent` wraps any turn handler. Both give an
`Agent` with the Go-shaped run API (`Agent.run`, `Agent.run_text`,
`Agent.connect`), the chat API (`Agent.chat`) and the snapshot verbs
(`Agent.get_snapshot`, `Agent.abort`). Every async verb has a ``_sync`` twin.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Sequence
from typing import Any, Protocol

from . import _sync
from .chat import Chat
from .connection import AgentConnection
from .errors import InvalidArgumentError, PermissionDeniedError
from .generate import CALL_CONFIG, PromptTurn
from .listings import AuditTrail, PendingTurn, PendingTurns
from .middleware import Middleware
from .models.base import Model
from .resume import canonical
from .runner import Invocation
from .session import ChunkSink, TurnHandler
from .stores.base import SessionStore
from .tools import Tool
from .twins import AgentSyncTwins
from .types import AgentInit, AgentInput, AgentOutput, Message, Part, SessionSnapshot, SessionState

__all__ = [
    "Agent",
    "AgentLike",
    "AuditTrail",
    "PendingTurn",
    "PendingTurns",
    "define_agent",
    "define_custom_agent",
]


class AgentLike(Protocol):
    """What `Chat` needs of an agent: a local `Agent` or a remote one."""

    name: str

    async def _invoke(
        self,
        inp: AgentInput,
        init: AgentInit,
        *,
        on_chunk: ChunkSink | None = None,
        abort_signal: asyncio.Event | None = None,
    ) -> AgentOutput: ...

    async def get_snapshot(
        self, snapshot_id: str | None = None, *, session_id: str | None = None
    ) -> SessionSnapshot | None: ...

    async def abort(self, snapshot_id: str) -> str | None: ...


def _init(
    snapshot_id: str | None, session_id: str | None, state: SessionState | dict[str, Any] | None
) -> AgentInit:
    if state is not None and (snapshot_id or session_id):
        raise InvalidArgumentError("state is mutually exclusive with snapshot_id and session_id")
    st = SessionState.model_validate(state) if isinstance(state, dict) else state
    return AgentInit(snapshot_id=snapshot_id, session_id=session_id, state=st)


class Agent(AgentSyncTwins):
    """An agent: a turn handler, a name, and where its sessions live.

    Args:
        name: The agent's name (its HTTP route and action name).
        handler: ``async (AgentInput, TurnContext) -> Message | str | None``.
        store: A session store (server-managed state), or None for
            client-managed state carried in each output's ``state``.
        description: What the agent does.
        state_secret: With client-managed state, sign the state blob with
            this secret (HMAC-SHA256) and reject blobs that do not verify.
    """

    def __init__(
        self,
        name: str,
        handler: TurnHandler,
        *,
        store: SessionStore | None = None,
        description: str = "",
        state_secret: str | bytes | None = None,
    ) -> None:
        self.name = name
        self.handler = handler
        self.store = store
        self.description = description
        self._secret = state_secret.encode() if isinstance(state_secret, str) else state_secret

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, state_management={self.state_management!r})"

    @property
    def state_management(self) -> str:
        """``"server"`` with a store, else ``"client"``."""
        return "server" if self.store is not None else "client"

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools of a prompt agent (empty for a custom agent)."""
        return dict(getattr(self.handler, "tools", {}))

    # -- signed state -----------------------------------------------------------------
    def _signature(self, state: SessionState) -> str:
        assert self._secret is not None
        body = state.to_wire()
        body.pop("signature", None)
        return hmac.new(self._secret, canonical(body).encode(), hashlib.sha256).hexdigest()

    def sign_state(self, state: SessionState) -> SessionState:
        """Attach the HMAC signature when a ``state_secret`` is set."""
        if self._secret is None:
            return state
        return state.model_copy(update={"signature": self._signature(state)})

    def verify_state(self, state: SessionState) -> SessionState:
        """Reject a state blob whose signature is missing or wrong (PERMISSION_DENIED)."""
        if self._secret is None:
            return state
        given = getattr(state, "signature", None)
        if not isinstance(given, str) or not hmac.compare_digest(given, self._signature(state)):
            raise PermissionDeniedError(
                f"The state sent to agent '{self.name}' is unsigned or was modified; "
                "send back the state exactly as the last output returned it."
            )
        return state

    # -- invocation -----------------------------------------------------------------
    def start(
        self,
        init: AgentInit | None = None,
        *,
        on_chunk: ChunkSink | None = None,
        abort_signal: asyncio.Event | None = None,
    ) -> Invocation:
        """Open a raw invocation (the transport-level API servers use)."""
        return Invocation(self, init or AgentInit(), on_chunk=on_chunk, abort_signal=abort_signal)

    async def _invoke(
        self,
        inp: AgentInput,
        init: AgentInit,
        *,
        on_chunk: ChunkSink | None = None,
        abort_signal: asyncio.Event | None = None,
    ) -> AgentOutput:
        inv = Invocation(self, init, on_chunk=on_chunk, abort_signal=abort_signal, start=False)
        inv.send(inp)
        return await inv.run_inline()

    async def run(
        self,
        input: AgentInput | str | None = None,
        *,
        snapshot_id: str | None = None,
        session_id: str | None = None,
        state: SessionState | dict[str, Any] | None = None,
        on_chunk: ChunkSink | None = None,
        config: dict[str, Any] | None = None,
    ) -> AgentOutput:
        """Run one turn (Go ``agent.Run``); a failed turn is returned in-band.

        Example:
            >>> out = await agent.run("Transfer $500 to savings")       # doctest: +SKIP
            >>> out.finish_reason                                       # doctest: +SKIP
            'interrupted'
        """
        inp = (
            input
            if isinstance(input, AgentInput)
            else AgentInput(message=Message(role="user", content=[Part(text=input or "")]))
        )
        token = CALL_CONFIG.set(config)
        try:
            return await self._invoke(inp, _init(snapshot_id, session_id, state), on_chunk=on_chunk)
        finally:
            CALL_CONFIG.reset(token)

    async def run_text(self, text: str, **kwargs: Any) -> AgentOutput:
        """Run one turn with a user text message."""
        return await self.run(text, **kwargs)

    def connect(
        self,
        *,
        snapshot_id: str | None = None,
        session_id: str | None = None,
        state: SessionState | dict[str, Any] | None = None,
    ) -> AgentConnection:
        """A multi-turn connection; use as ``async with`` (or ``with``)."""
        return AgentConnection(self, _init(snapshot_id, session_id, state))

    def chat(
        self,
        *,
        snapshot_id: str | None = None,
        session_id: str | None = None,
        state: SessionState | dict[str, Any] | None = None,
    ) -> Chat:
        """A `Chat` that tracks the session from turn to turn."""
        return Chat(self, snapshot_id=snapshot_id, session_id=session_id, state=state)

    # -- snapshots --------------------------------------------------------------------
    def _require_store(self, verb: str) -> SessionStore:
        if self.store is None:
            from .errors import FailedPreconditionError

            raise FailedPreconditionError(
                f"agent '{self.name}' has no store configured (client-managed state); {verb} needs one"
            )
        return self.store

    async def get_snapshot(
        self, snapshot_id: str | None = None, *, session_id: str | None = None
    ) -> SessionSnapshot | None:
        """A snapshot by id, or a session's latest (leaf) snapshot; None if unknown."""
        store = self._require_store("get_snapshot")
        if (snapshot_id is None) == (session_id is None):
            raise InvalidArgumentError("get_snapshot needs exactly one of snapshot_id and session_id")
        if snapshot_id is not None:
            return await store.get_snapshot(snapshot_id)
        assert session_id is not None
        return await store.get_latest(session_id)

    async def abort(self, snapshot_id: str) -> str | None:
        """Abort a pending (detached) snapshot; returns its previous status.

        Terminal snapshots are left as they are; an unknown id returns None.
        """
        store = self._require_store("abort")
        previous: str | None = None

        def mutate(cur: SessionSnapshot | None) -> SessionSnapshot | None:
            nonlocal previous
            if cur is None:
                return None
            previous = cur.status or "completed"
            if cur.status != "pending":
                return None
            from .stores.base import now_iso

            return cur.model_copy(update={"status": "aborted", "updated_at": now_iso()})

        current = await store.get_snapshot(snapshot_id)
        await store.save_snapshot(snapshot_id, mutate)
        if previous == "pending" and current is not None and current.status == "expired":
            previous = "expired"
        return previous

    async def pending(self) -> PendingTurns:
        """The sessions whose latest snapshot waits on interrupts, oldest first.

        Read from the store, so it works after a kernel restart with a
        persistent store (SQLite, file).
        """
        store = self._require_store("pending")
        out: list[PendingTurn] = []
        for sid in await store.session_ids():
            snap = await store.get_latest(sid)
            if snap is None or snap.status != "completed" or snap.finish_reason != "interrupted":
                continue
            msgs = snap.state.messages if snap.state is not None else []
            if msgs and msgs[-1].role == "model" and msgs[-1].interrupts():
                out.append(PendingTurn(self, snap, msgs[-1]))
        out.sort(key=lambda p: p.snapshot.updated_at or "")
        return PendingTurns(out)

    async def audit(self, session_id: str) -> AuditTrail:
        """Every accepted answer to an interrupt in a session, oldest first."""
        return AuditTrail(await self._require_store("audit").audit(session_id))

    # -- sync twins (run/get_snapshot/abort come from AgentSyncTwins) -------------------
    def pending_sync(self) -> PendingTurns:
        return _sync.run(self.pending())

    def audit_sync(self, session_id: str) -> AuditTrail:
        return _sync.run(self.audit(session_id))


def define_agent(
    name: str,
    *,
    model: str | Model,
    system: str | None = None,
    tools: Sequence[Tool] = (),
    store: SessionStore | None = None,
    use: Sequence[Middleware] = (),
    config: Any = None,
    max_turns: int = 5,
    description: str = "",
    state_secret: str | bytes | None = None,
) -> Agent:
    """Define a prompt agent: a model, a system prompt and tools.

    Args:
        name: The agent's name.
        model: A model object or a ``provider/model`` name.
        system: The system prompt (re-sent each turn, never stored).
        tools: Tools, interrupts and resumable tools the model may call.
        store: A session store, or None for client-managed state.
        use: Middleware, e.g. ``[ToolApproval(allowed_tools=[...])]``.
        config: Model configuration passed in each request.
        max_turns: The most model calls one turn may make.

    Example:
        >>> from nb_agents.testing import ScriptedModel
        >>> agent = define_agent("echo", model=ScriptedModel([]))
        >>> agent.state_management
        'client'
    """
    handler = PromptTurn(model=model, system=system, tools=tools, use=use, config=config, max_turns=max_turns)
    return Agent(name, handler, store=store, description=description, state_secret=state_secret)


def define_custom_agent(
    name: str,
    handler: TurnHandler,
    *,
    store: SessionStore | None = None,
    description: str = "",
    state_secret: str | bytes | None = None,
) -> Agent:
    """Define an agent from a turn handler.

    The handler runs one turn: ``async def handler(inp, ctx) -> Message | str | None``.
    It reads and changes ``ctx.session`` (messages, custom state, artifacts)
    and may stream with ``ctx.send_chunk``.

    Example:
        >>> async def count(inp, ctx):
        ...     await ctx.session.update_custom(lambda c: {"n": (c or {}).get("n", 0) + 1})
        ...     return "counted"
        >>> counter = define_custom_agent("counter", count)
    """
    return Agent(name, handler, store=store, description=description, state_secret=state_secret)
