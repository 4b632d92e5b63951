"""`Agent`: a named turn handler plus an optional store, and its APIs.

`define_agent` builds a prompt agent (a model with tools, Genkit's
``defineAgent``); `define_custom_agent` wraps any turn handler. Both give an
`Agent`: a `BaseAgent` (chat, run, run_text and their ``_sync`` twins) whose
turns run in this process, on the private engine (`nb_agents._engine`), plus
`Agent.connect` (Go's multi-turn connection), the snapshot verbs and the
listings of paused turns and answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ._engine import AgentSpec, InputCheck, Invocation, PromptTurn, StateSigner, expire, invoke
from ._engine.expiry import due_parts
from ._engine.forking import fork_snapshot, forks_of
from ._engine.limits import check_id
from ._engine.ownership import Action, Authorize, visible
from ._engine.session_rules import revoke_session_rule, session_rules
from ._sync import twin
from .chat import Chat, make_init
from .connection import AgentConnection
from .endpoint import BaseAgent
from .errors import FailedPreconditionError, InvalidArgumentError
from .listings import AuditTrail, PendingTurn, PendingTurns
from .middleware import Middleware
from .models.base import Model
from .responses import AgentResponse
from .rules import SessionRule, SessionRules
from .session import TurnHandler
from .stores.base import SessionStore, now_iso
from .tools import Tool
from .toolsets import Toolset
from .types import AgentInit, AgentInput, AgentOutput, CallOptions, ChunkSink, SessionSnapshot, SessionState

__all__ = ["Agent", "define_agent", "define_custom_agent"]

_NO_OPTIONS = CallOptions()


class Agent(BaseAgent):
    """An agent: a turn handler, a name, and where its sessions live.

    Args:
        name: The agent's name (its HTTP route and action name).
        handler: ``async (AgentInput, TurnContext) -> Message | str | None``.
        store: A session store (server-managed state), or None for
            client-managed state carried in each output's ``state``.
        description: What the agent does.
        state_secret: With client-managed state, sign the state blob with
            this secret (HMAC-SHA256) and reject blobs that do not verify.
        tools: The handler's tools (what a resume may restart, what the
            notebook forms read schemas from).
        validate_input: Checks an input before anything runs or is claimed;
            raises an `NbAgentsError` to refuse it.
        authorize: ``(principal, snapshot, action) -> bool``: lets a principal read,
            message, resume or abort sessions another principal owns (a reviewer
            answering others' interrupts). Without it only the owner may.
        tracks_tools: The handler reports when it starts a tool (prompt agents
            do); a custom handler's turn counts as having acted once it runs.
    """

    def __init__(
        self,
        name: str,
        handler: TurnHandler,
        *,
        store: SessionStore | None = None,
        description: str = "",
        state_secret: str | bytes | None = None,
        tools: Sequence[Tool] | Mapping[str, Tool] = (),
        validate_input: InputCheck | None = None,
        authorize: Authorize | None = None,
        tracks_tools: bool = False,
    ) -> None:
        # a Mapping is kept as it is: a prompt agent's `ToolTable` grows as its toolsets are listed
        by_name = tools if isinstance(tools, Mapping) else {t.name: t for t in tools}
        signer = StateSigner(state_secret) if state_secret is not None else None
        self.spec = AgentSpec(name, handler, store, signer, by_name, validate_input, authorize, tracks_tools)
        self.name = name
        self.description = description

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, state_management={self.state_management!r})"

    @property
    def handler(self) -> TurnHandler:
        return self.spec.handler

    @property
    def store(self) -> SessionStore | None:
        return self.spec.store

    @store.setter
    def store(self, store: SessionStore | None) -> None:
        """Replace the store (``nb-agents serve --store`` does); turns already running keep theirs."""
        self.spec = replace(self.spec, store=store)

    @property
    def state_management(self) -> str:
        """``"server"`` with a store, else ``"client"``."""
        return "server" if self.spec.store is not None else "client"

    @property
    def tools(self) -> dict[str, Tool]:
        """The agent's tools by name (empty for a custom agent given none).

        A toolset's tools (an MCP server's) are here once a turn has listed them.
        """
        return dict(self.spec.tools)

    async def aclose(self) -> None:
        """Close the agent's toolsets (its MCP servers' connections); they reopen on next use."""
        for toolset in getattr(self.spec.handler, "toolsets", ()):
            await toolset.aclose()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def update_tools(self, *tools: Tool) -> None:
        """Use these tools in place of the agent's tools of the same names, from the next call on.

        For the notebook: fix a tool that failed, re-run its cell, ``agent.update_tools(fixed)``,
        then *Retry* the answer (or ``await chat.retry()``).

        Example:
            >>> agent.update_tools(transfer_money)               # doctest: +SKIP
        """
        replace = getattr(self.spec.handler, "replace_tools", None)
        if replace is None:
            raise FailedPreconditionError(
                f"agent '{self.name}' runs a custom handler: its tools are its own to replace"
            )
        replace(tools)

    def as_tool(self, *, name: str | None = None, description: str | None = None) -> Tool:
        """This agent as a tool of another: its pauses surface at the top (`nb_agents.subagents`).

        Args:
            name: The tool's name (default: the agent's name).
            description: What the other agent's model reads about it (default: this agent's).

        Example:
            >>> finder = researcher.as_tool(description="Finds facts")  # doctest: +SKIP
            >>> lead = define_agent("lead", model=..., tools=[finder])  # doctest: +SKIP
            >>> res = await lead.chat().send("...")                   # doctest: +SKIP
            >>> res.interrupts[0].path                                # doctest: +SKIP
            ['researcher']
        """
        from .subagents import subagent_tool

        return subagent_tool(self, name=name, description=description)

    # -- invocation -----------------------------------------------------------------
    def start(
        self,
        init: AgentInit | None = None,
        *,
        options: CallOptions = _NO_OPTIONS,
        on_chunk: ChunkSink | None = None,
        abort_signal: asyncio.Event | None = None,
    ) -> Invocation:
        """Open a raw invocation (the transport-level API servers use)."""
        return Invocation(
            self.spec, init or AgentInit(), options=options, on_chunk=on_chunk, abort_signal=abort_signal
        )

    async def invoke(
        self,
        input: AgentInput,
        init: AgentInit,
        *,
        options: CallOptions = _NO_OPTIONS,
        on_chunk: ChunkSink | None = None,
        abort_signal: asyncio.Event | None = None,
    ) -> AgentOutput:
        """Run one turn from `init` in this process; a failed turn is returned in-band."""
        return await invoke(
            self.spec, input, init, options=options, on_chunk=on_chunk, abort_signal=abort_signal
        )

    def connect(
        self,
        *,
        snapshot_id: str | None = None,
        session_id: str | None = None,
        state: SessionState | dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
    ) -> AgentConnection:
        """A multi-turn connection; use as ``async with`` (or ``with``)."""
        options = CallOptions(context=context) if context is not None else _NO_OPTIONS
        return AgentConnection(self.spec, make_init(snapshot_id, session_id, state), options=options)

    # -- snapshots --------------------------------------------------------------------
    def _require_store(self, verb: str) -> SessionStore:
        if self.spec.store is None:
            raise FailedPreconditionError(
                f"agent '{self.name}' has no store configured (client-managed state); {verb} needs one"
            )
        return self.spec.store

    def _may(self, snap: SessionSnapshot | None, context: dict[str, Any] | None, action: Action) -> bool:
        return snap is not None and visible(
            snap, agent=self.name, context=context, action=action, authorize=self.spec.authorize
        )

    async def get_snapshot(
        self,
        snapshot_id: str | None = None,
        *,
        session_id: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> SessionSnapshot | None:
        """A snapshot by id, or a session's latest (leaf) snapshot; None if unknown.

        With a request `context`, another principal's (or another agent's)
        snapshot reads as unknown too, unless the agent's ``authorize`` grants it.
        """
        store = self._require_store("get_snapshot")
        if (snapshot_id is None) == (session_id is None):
            raise InvalidArgumentError("get_snapshot needs exactly one of snapshot_id and session_id")
        check_id(snapshot_id, "snapshot_id")
        check_id(session_id, "session_id")
        if snapshot_id is not None:
            snap = await store.get_snapshot(snapshot_id)
        else:
            assert session_id is not None
            snap = await store.get_latest(session_id)
        if not self._may(snap, context, "read"):
            return None
        assert snap is not None
        if await self._expire(snap) is not None and session_id is not None:
            snap = await store.get_latest(session_id)  # the session went on from the default
        return snap

    async def _expire(self, snap: SessionSnapshot) -> AgentOutput | None:
        """Apply the defaults of `snap`'s pauses past their deadline (once, whoever reads first).

        The turn the defaults ran, or None when none was due or an answer given in time holds the pause.
        """
        if snap.state is None or not due_parts(snap.state.messages):
            return None
        expired = await expire(self.spec, snap)
        return expired.output if expired is not None and not expired.preempted else None

    async def expire_due(self) -> list[AgentOutput]:
        """Apply the default of every pause of this agent past its deadline; the turns it ran.

        Defaults also apply lazily, when a pause is next read (a resume or send,
        `pending`, `get_snapshot`); call this (say, from a scheduled job) so that
        they apply on time even when nobody reads. Each applies once across
        processes: a sweep that finds another process applying it gets that turn.

        Example:
            >>> outs = await agent.expire_due()               # doctest: +SKIP
            >>> [o.finish_reason for o in outs]               # doctest: +SKIP
            ['stop']
        """
        store = self._require_store("expire_due")
        outs: list[AgentOutput] = []
        for sid in await store.session_ids():
            leaf = await store.get_latest(sid)
            if leaf is not None and (leaf.agent is None or leaf.agent == self.name):
                out = await self._expire(leaf)
                if out is not None:
                    outs.append(out)
        return outs

    async def abort(self, snapshot_id: str, *, context: dict[str, Any] | None = None) -> str | None:
        """Abort a pending (detached) snapshot; returns its previous status.

        Terminal snapshots are left as they are; an unknown id returns None (as
        does, with a request `context`, a snapshot the caller may not abort).
        """
        store = self._require_store("abort")
        check_id(snapshot_id, "snapshot_id")
        if context is not None and not self._may(await store.get_snapshot(snapshot_id), context, "abort"):
            return None
        previous: str | None = None

        def mutate(cur: SessionSnapshot | None) -> SessionSnapshot | None:
            nonlocal previous
            if cur is None:
                return None
            previous = cur.status or "completed"
            if cur.status != "pending":
                return None
            return cur.model_copy(update={"status": "aborted", "updated_at": now_iso()})

        current = await store.get_snapshot(snapshot_id)
        await store.save_snapshot(snapshot_id, mutate)
        if previous == "pending" and current is not None and current.status == "expired":
            previous = "expired"
        return previous

    async def pending(self, *, context: dict[str, Any] | None = None) -> PendingTurns:
        """The sessions whose latest snapshot waits on interrupts, oldest first.

        Read from the store, so it works after a kernel restart with a
        persistent store (SQLite, file). Only this agent's sessions, and with a
        request `context` only those the caller may answer. A turn whose answer
        failed or was aborted after its tools started is listed too, with that
        ``status``: `PendingTurn.retry` goes on. A pause past its deadline is not
        listed: its declared default is applied first (see `expire_due`).
        """
        store = self._require_store("pending")
        out: list[PendingTurn] = []
        for sid in await store.session_ids():
            leaf = await store.get_latest(sid)
            if leaf is not None and self._may(leaf, context, "read") and await self._expire(leaf) is not None:
                leaf = await store.get_latest(sid)  # past its deadline: listed as the default left it
            attempt = None
            snap = leaf
            if leaf is not None and leaf.status in ("failed", "aborted") and leaf.answer and leaf.parent_id:
                attempt, snap = leaf, await store.get_snapshot(leaf.parent_id)  # an answer that failed
            if snap is None or snap.status != "completed" or snap.finish_reason != "interrupted":
                continue
            if not self._may(snap, context, "resume"):
                continue
            msgs = snap.state.messages if snap.state is not None else []
            if msgs and msgs[-1].role == "model" and msgs[-1].interrupts():
                out.append(PendingTurn(self, snap, msgs[-1], attempt))
        out.sort(key=lambda p: p.snapshot.updated_at or "")
        return PendingTurns(out)

    async def audit(self, session_id: str, *, context: dict[str, Any] | None = None) -> AuditTrail:
        """Every accepted answer to an interrupt in a session, oldest first.

        With a request `context`, a session the caller may not read has none.
        """
        store = self._require_store("audit")
        if context is not None and not self._may(await store.get_latest(session_id), context, "read"):
            return AuditTrail([])
        return AuditTrail(await store.audit(session_id))

    # -- per-session approval rules ---------------------------------------------------
    async def rules(self, session_id: str, *, context: dict[str, Any] | None = None) -> SessionRules:
        """The session's approval rules (made by ``approve(always=True)``), oldest first.

        Read from the snapshot the session's next turn continues from (one read,
        two if its latest turn is still running). With a request `context`, a
        session the caller may not read has none.

        Example:
            >>> for rule in agent.rules_sync(chat.session_id):          # doctest: +SKIP
            ...     print(rule.id, rule.tool)
        """
        store = self._require_store("rules")
        return SessionRules(await session_rules(self.spec, store, session_id, context))

    async def revoke_rule(
        self, session_id: str, rule_id: str, *, context: dict[str, Any] | None = None
    ) -> SessionRule:
        """Revoke a per-session rule: this tool's calls are held for a person again.

        Returns the revoked rule. The revocation is audited (kind
        ``"rule-revoked"``, by the request's principal when known) in the same
        write that drops the rule.

        Raises:
            NotFoundError: The session has no rule with this id (or the caller
                may not change the session).
            FailedPreconditionError: A turn of the session is running; revoke
                when it has ended.
        """
        store = self._require_store("revoke_rule")
        return await revoke_session_rule(self.spec, store, session_id, rule_id, context)

    async def fork(
        self,
        snapshot_id: str | None = None,
        *,
        session_id: str | None = None,
        key: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> Chat:
        """Copy a paused turn into a fork of its own and return a chat on it (see `Chat.fork`).

        Give the paused snapshot's id (a response's ``snapshot_id``), also of a
        pause that was answered already, or a `session_id` whose latest
        snapshot is paused. The fork lives in a new session,
        ``<session>~fork-<id>``, with the original's agent and owner: a
        session of its own (not a branch in the original session) so that the
        original stays its session's latest snapshot, and both pauses are
        listed by `pending` and continuable by session id. The same `key`
        from the same pause gives the same fork (it is written once).

        Raises:
            NotFoundError: No such snapshot (or, with a `context`, one the caller may not resume).
            FailedPreconditionError: It is not a paused turn, or the agent has no store.

        Example:
            >>> other = await agent.fork(res.snapshot_id)                # doctest: +SKIP
            >>> other.last.interrupts[0].name                            # doctest: +SKIP
            'transferMoney'
        """
        row = await fork_snapshot(self.spec, snapshot_id, session_id=session_id, key=key, context=context)
        assert row.state is not None
        state = row.state.model_copy(deep=True)
        chat = Chat(self, snapshot_id=row.snapshot_id, session_id=row.session_id)
        chat.messages = list(state.messages)
        chat.custom = state.custom
        chat.artifacts = list(state.artifacts)
        out = AgentOutput(
            message=state.messages[-1],
            finish_reason="interrupted",
            snapshot_id=row.snapshot_id,
            session_id=row.session_id,
        )
        chat.last = AgentResponse(out, custom=state.custom, chat=chat)
        chat.last.messages = list(chat.messages)
        return chat

    async def forks(self, session_id: str, *, context: dict[str, Any] | None = None) -> list[SessionSnapshot]:
        """The forks made from a session's snapshots: each fork's first row, oldest first.

        A fork's row names the snapshot it was copied from (``fork_of``); reopen
        one with ``agent.chat(session_id=row.session_id)`` (its latest turn) or
        ``agent.chat(snapshot_id=row.snapshot_id)`` (its pause). Forks of a fork
        are listed under the fork's session. With a request `context`, only
        those the caller may read.
        """
        self._require_store("forks")
        return await forks_of(self.spec, session_id, context=context)

    pending_sync = twin(pending)
    expire_due_sync = twin(expire_due)
    audit_sync = twin(audit)
    rules_sync = twin(rules)
    revoke_rule_sync = twin(revoke_rule)
    aclose_sync = twin(aclose)
    fork_sync = twin(fork)
    forks_sync = twin(forks)


def define_agent(
    name: str,
    *,
    model: str | Model,
    system: str | None = None,
    tools: Sequence[Tool | Toolset] = (),
    store: SessionStore | None = None,
    use: Sequence[Middleware] = (),
    config: Any = None,
    max_turns: int = 5,
    description: str = "",
    state_secret: str | bytes | None = None,
    authorize: Authorize | None = None,
) -> Agent:
    """Define a prompt agent: a model, a system prompt and tools.

    Args:
        name: The agent's name.
        model: A model object or a ``provider/model`` name.
        system: The system prompt (re-sent each turn, never stored).
        tools: Tools, interrupts and resumable tools the model may call, and
            toolsets such as MCP servers (`nb_agents.mcp.MCPServer`): those are
            connected on the first turn and listed at the start of each turn.
        store: A session store, or None for client-managed state.
        use: Middleware, e.g. ``[ToolApproval(allowed_tools=[...])]``.
        config: Model configuration passed in each request.
        max_turns: The most model calls one turn may make.
        authorize: Who besides a session's owner may act on it (see `Agent`).

    Example:
        >>> from nb_agents.testing import ScriptedModel
        >>> agent = define_agent("echo", model=ScriptedModel([]))
        >>> agent.state_management
        'client'
    """
    handler = PromptTurn(model=model, system=system, tools=tools, use=use, config=config, max_turns=max_turns)
    return Agent(
        name,
        handler,
        store=store,
        description=description,
        state_secret=state_secret,
        tools=handler.tools,
        validate_input=handler.validate_input,
        authorize=authorize,
        tracks_tools=True,
    )


def define_custom_agent(
    name: str,
    handler: TurnHandler,
    *,
    store: SessionStore | None = None,
    description: str = "",
    state_secret: str | bytes | None = None,
    authorize: Authorize | None = None,
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
    return Agent(
        name, handler, store=store, description=description, state_secret=state_secret, authorize=authorize
    )
