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
from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta
from typing import Any

from ._engine import AgentSpec, Authorize, Decide, Engine, InputCheck, PromptTurn, StateSigner
from ._sync import twin
from .chat import Chat, make_init
from .connection import AgentConnection
from .errors import FailedPreconditionError
from .listings import AuditTrail, PendingTurn, PendingTurns, select
from .notify import OnPause
from .protocol import BaseAgent, TurnStream
from .rules import SessionRule, SessionRules
from .session import TurnHandler
from .stores.base import SessionStore
from .tools import Tool
from .types import AgentInit, AgentInput, AgentOutput, CallOptions, ChunkSink, SessionSnapshot, SessionState

__all__ = ["Agent"]

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
        decide: The handler's decision step for an answer's calls (prompt agents
            have one: `nb_agents._engine.decision`), run before the answer is claimed.
        on_pause: Called when a turn ends paused on interrupts, e.g.
            ``nba.notify.webhook(url, secret=...)`` (`nb_agents.notify`); never
            blocks or fails the turn.
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
        decide: Decide | None = None,
        on_pause: OnPause | None = None,
    ) -> None:
        # a Mapping is kept as it is: a prompt agent's `ToolTable` grows as its toolsets are listed
        by_name = tools if isinstance(tools, Mapping) else {t.name: t for t in tools}
        signer = StateSigner(state_secret) if state_secret is not None else None
        if on_pause is not None and not callable(on_pause):
            raise TypeError(
                f"on_pause must be callable (an event -> None hook), got {type(on_pause).__name__}"
            )
        self._engine = Engine(
            AgentSpec(
                name,
                handler,
                store,
                signer,
                by_name,
                validate_input,
                authorize,
                tracks_tools,
                decide,
                on_pause,
            )
        )
        self.name = name
        self.description = description

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, state_management={self.state_management!r})"

    @property
    def spec(self) -> AgentSpec:
        """The agent as the engine sees it (name, handler, store, tools, checks)."""
        return self._engine.spec

    @property
    def on_pause(self) -> OnPause | None:
        """The hook called when a turn pauses (``define_agent(..., on_pause=...)``), or None."""
        return self.spec.on_pause

    @property
    def handler(self) -> TurnHandler:
        return self.spec.handler

    @property
    def store(self) -> SessionStore | None:
        return self.spec.store

    @store.setter
    def store(self, store: SessionStore | None) -> None:
        """Replace the store (``nb-agents serve --store`` does); turns already running keep theirs."""
        self._engine.use_store(store)

    @property
    def state_management(self) -> str:
        """``"server"`` with a store, else ``"client"``."""
        return "server" if self.spec.store is not None else "client"

    @property
    def can_fork(self) -> bool:
        """Whether `fork` works: with a store."""
        return self.spec.store is not None

    @property
    def tools(self) -> dict[str, Tool]:
        """The agent's tools by name (empty for a custom agent given none).

        A toolset's tools (an MCP server's) are here once a turn has listed them.
        """
        return dict(self.spec.tools)

    async def aclose(self) -> None:
        """Close the agent's toolsets (its MCP servers' connections); they reopen on next use."""
        handler = self.spec.handler
        for toolset in handler.toolsets if isinstance(handler, PromptTurn) else ():
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
        handler = self.spec.handler
        if not isinstance(handler, PromptTurn):
            raise FailedPreconditionError(
                f"agent '{self.name}' runs a custom handler: its tools are its own to replace"
            )
        handler.replace_tools(tools)

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
    ) -> TurnStream:
        """Open a raw invocation (the transport-level API servers use): see `TurnStream`."""
        return self._engine.open(init, options=options, on_chunk=on_chunk, abort_signal=abort_signal)

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
        return await self._engine.invoke(
            input, init, options=options, on_chunk=on_chunk, abort_signal=abort_signal
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
        return AgentConnection(self._engine, make_init(snapshot_id, session_id, state), options=options)

    # -- snapshots --------------------------------------------------------------------
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
        A pause past its deadline reads as its default left it.
        """
        return await self._engine.get_snapshot(snapshot_id, session_id, context)

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
        return await self._engine.expire_due()

    async def abort(self, snapshot_id: str, *, context: dict[str, Any] | None = None) -> str | None:
        """Abort a pending (detached) snapshot; returns its previous status.

        Terminal snapshots are left as they are; an unknown id returns None (as
        does, with a request `context`, a snapshot the caller may not abort).
        """
        return await self._engine.abort(snapshot_id, context)

    async def pending(
        self,
        *,
        context: dict[str, Any] | None = None,
        tool: str | Collection[str] | None = None,
        older_than: timedelta | float | None = None,
    ) -> PendingTurns:
        """The sessions whose latest snapshot waits on interrupts, oldest first (the inbox).

        Read from the store, so it works after a kernel restart with a
        persistent store (SQLite, file). Only this agent's sessions, and with a
        request `context` only those the caller may answer (its own, or every
        session of the agent for an approver: ``roles: ["approver"]``). A turn
        whose answer failed or was aborted after its tools started is listed
        too, with that ``status``: `PendingTurn.retry` goes on. A pause past its
        deadline is not listed: its declared default is applied first (see `expire_due`).

        Args:
            context: The request context the listing is scoped by.
            tool: Only turns waiting on a call of this tool (a name or names);
                their `PendingTurn.items` are those calls.
            older_than: Only turns that have waited at least this long (a
                `timedelta` or seconds).

        Example:
            >>> for item in (await agent.pending(tool="transfer")).items():   # doctest: +SKIP
            ...     print(item.session_id, item.tool, item.requested_by, item.age)
        """
        select([], tool=tool, older_than=older_than)  # bad filters are refused before the store is read
        found = [PendingTurn(self, *waiting) for waiting in await self._engine.pending(context)]
        return PendingTurns(select(found, tool=tool, older_than=older_than))

    async def audit(self, session_id: str, *, context: dict[str, Any] | None = None) -> AuditTrail:
        """Every accepted answer to an interrupt in a session, oldest first.

        With a request `context`, a session the caller may not read has none.
        """
        return AuditTrail(await self._engine.audit(session_id, context))

    # -- per-session approval rules ---------------------------------------------------
    async def rules(self, session_id: str, *, context: dict[str, Any] | None = None) -> SessionRules:
        """The session's approval rules (made by ``approve(always=True)``), oldest first.

        Kept per session by the store, as they are now (a revoked rule is gone
        for every snapshot of the session). With a request `context`, a session
        the caller may not read has none.

        Example:
            >>> for rule in agent.rules_sync(chat.session_id):          # doctest: +SKIP
            ...     print(rule.id, rule.tool)
        """
        return SessionRules(await self._engine.rules(session_id, context))

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
        """
        return await self._engine.revoke_rule(session_id, rule_id, context)

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
        return Chat.at(self, await self._engine.fork(snapshot_id, session_id, key, context), paused=True)

    async def forks(self, session_id: str, *, context: dict[str, Any] | None = None) -> list[SessionSnapshot]:
        """The forks made from a session's snapshots: each fork's first row, oldest first.

        A fork's row names the snapshot it was copied from (``fork_of``); reopen
        one with ``agent.chat(session_id=row.session_id)`` (its latest turn) or
        ``agent.chat(snapshot_id=row.snapshot_id)`` (its pause). Forks of a fork
        are listed under the fork's session. With a request `context`, only
        those the caller may read.
        """
        return await self._engine.forks(session_id, context)

    expire_due_sync = twin(expire_due)
    aclose_sync = twin(aclose)
