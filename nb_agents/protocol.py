"""`BaseAgent`: every verb a caller may use on an agent, local or remote (the agent protocol).

Chats, notebook widgets and the HTTP server call agents only through these
verbs. `BaseAgent` declares each one, with what is the same for every agent
(``chat()``, ``load_chat()``, the Go-shaped ``run`` / ``run_text``, and the
``_sync`` twin of every async verb), and answers the ones an agent cannot do
with a clear `FailedPreconditionError` naming the agent and the verb.
`nb_agents.Agent` runs the verbs in this process and `nb_agents.RemoteAgent`
over HTTP; both are `BaseAgent`, and so is a transport of your own. A caller
never probes an agent with ``hasattr``: it calls the verb and reads the
answer. Whether an agent can fork is declared (``can_fork``), for a widget
that offers the button only then.

=============  ======================================================  =======  ======
verb           what it does                                            Agent    Remote
=============  ======================================================  =======  ======
invoke         run one input from an init (every other turn verb)      yes      yes
get_snapshot   a snapshot by id, or a session's latest                 yes      yes
abort          abort a running (or detached) turn                      yes      yes
pending        the interrupts waiting for an answer                    yes      yes
audit          a session's decisions                                   yes      no
rules          a session's approval rules                              yes      yes
revoke_rule    revoke one of them                                      yes      yes
fork           copy a paused turn into a session of its own            yes      no
forks          the forks of a session                                  yes      no
tools          the agent's tools by name (schemas, for forms)          yes      {}
=============  ======================================================  =======  ======

Every async verb has a ``<verb>_sync`` twin (`BaseAgent`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypedDict, Unpack

from ._sync import twin
from .chat import Chat, InputLike, as_input, call_options, make_init
from .errors import FailedPreconditionError, InvalidArgumentError, NotFoundError
from .types import AgentInit, AgentInput, AgentOutput, CallOptions, ChunkSink, SessionSnapshot, SessionState

if TYPE_CHECKING:
    from .listings import AuditTrail, PendingTurns
    from .rules import SessionRule, SessionRules
    from .tools import Tool

__all__ = ["AgentEndpoint", "AgentProtocol", "BaseAgent", "RunOptions", "TurnStream"]


class RunOptions(TypedDict, total=False):
    """`BaseAgent.run`'s keyword arguments (which ``run_text`` takes too)."""

    snapshot_id: str | None
    session_id: str | None
    state: SessionState | dict[str, Any] | None
    on_chunk: ChunkSink | None
    config: dict[str, Any] | None
    context: dict[str, Any] | None


class TurnStream(Protocol):
    """An open invocation of a local agent (`Agent.start`): inputs in, one output out.

    What the HTTP server and `AgentConnection` drive: ``send`` queues an input
    (a turn), ``close`` ends the input side, ``output`` waits for the last turn,
    ``abort`` aborts the turn in flight, ``on_done`` calls back when it is over.
    """

    def send(self, inp: AgentInput) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...

    async def output(self) -> AgentOutput: ...

    def on_done(self, callback: Callable[[], None]) -> None: ...


class BaseAgent:
    """The shared verbs of local and remote agents (see the module docstring).

    Attributes:
        name: The agent's name.
        description: What the agent does ("" when not said).
    """

    name: str
    description: str = ""

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The agent's tools by name (their schemas make the notebook's forms); none unless known."""
        return {}

    @property
    def can_fork(self) -> bool:
        """Whether `fork` works on this agent (an agent with a store, in this process)."""
        return False

    def _cannot(self, verb: str, why: str) -> NoReturn:
        raise FailedPreconditionError(f"agent '{self.name}' cannot {verb}: {why}")

    async def invoke(
        self,
        input: AgentInput,
        init: AgentInit,
        *,
        options: CallOptions = CallOptions(),  # noqa: B008 - frozen, shared safely
        on_chunk: ChunkSink | None = None,
        abort_signal: asyncio.Event | None = None,
    ) -> AgentOutput:
        """Run one turn from `init` (the `AgentEndpoint` verb every agent implements)."""
        raise NotImplementedError

    async def get_snapshot(
        self,
        snapshot_id: str | None = None,
        *,
        session_id: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> SessionSnapshot | None:
        """A snapshot by id, or a session's latest (leaf) snapshot; None if unknown."""
        raise NotImplementedError

    async def abort(self, snapshot_id: str, *, context: dict[str, Any] | None = None) -> str | None:
        """Abort a pending (detached) snapshot; returns its previous status."""
        raise NotImplementedError

    async def pending(
        self,
        *,
        context: dict[str, Any] | None = None,
        tool: str | Collection[str] | None = None,
        older_than: timedelta | float | None = None,
    ) -> PendingTurns:
        """The interrupts waiting for an answer, across sessions (the inbox; see `Agent.pending`)."""
        self._cannot("list what is pending", "it keeps no sessions it can list")

    async def audit(self, session_id: str, *, context: dict[str, Any] | None = None) -> AuditTrail:
        """A session's decisions (answers, rules, deadlines), oldest first."""
        self._cannot("read an audit trail", "it keeps none it can read")

    async def rules(self, session_id: str, *, context: dict[str, Any] | None = None) -> SessionRules:
        """A session's approval rules (made by ``approve(always=True)``)."""
        self._cannot("list approval rules", "it keeps none")

    async def revoke_rule(
        self, session_id: str, rule_id: str, *, context: dict[str, Any] | None = None
    ) -> SessionRule:
        """Revoke one of a session's approval rules."""
        self._cannot("revoke approval rules", "it keeps none")

    async def fork(
        self,
        snapshot_id: str | None = None,
        *,
        session_id: str | None = None,
        key: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> Chat:
        """Copy a paused turn into a session of its own, to answer it differently."""
        self._cannot("fork", "fork with the agent object that owns the store")

    async def forks(self, session_id: str, *, context: dict[str, Any] | None = None) -> list[SessionSnapshot]:
        """The forks made from a session's snapshots."""
        self._cannot("list forks", "list them with the agent object that owns the store")

    def chat(
        self,
        *,
        snapshot_id: str | None = None,
        session_id: str | None = None,
        state: SessionState | dict[str, Any] | None = None,
    ) -> Chat:
        """A `Chat` that tracks the session from turn to turn.

        Example:
            >>> chat = agent.chat()                                    # doctest: +SKIP
            >>> res = chat.send_sync("Transfer $500 to savings")       # doctest: +SKIP
        """
        return Chat(self, snapshot_id=snapshot_id, session_id=session_id, state=state)

    async def load_chat(self, snapshot_id: str | None = None, *, session_id: str | None = None) -> Chat:
        """A `Chat` loaded from a stored snapshot (Genkit's ``loadChat`` / ``load_chat``).

        Give exactly one of `snapshot_id` and `session_id` (its latest
        snapshot, as stored). The chat holds the snapshot's messages, custom
        state and artifacts, and its snapshot and session ids, so its next turn
        continues from that very snapshot; a snapshot that cannot be continued
        (a pending one) is refused by that turn. To go on from a session's last
        good turn instead, use ``chat(session_id=...)``.

        Raises:
            NotFoundError: No such snapshot (or session).
            InvalidArgumentError: Neither or both ids given.

        Example:
            >>> chat = await agent.load_chat(res.snapshot_id)           # doctest: +SKIP
            >>> [m.role for m in chat.messages]                          # doctest: +SKIP
            ['user', 'model']
        """
        if (snapshot_id is None) == (session_id is None):
            raise InvalidArgumentError("load_chat needs exactly one of snapshot_id and session_id")
        snap = await self.get_snapshot(snapshot_id, session_id=session_id)
        if snap is None:
            what = f"Snapshot {snapshot_id}" if snapshot_id is not None else f"Session {session_id}"
            raise NotFoundError(f"{what} not found.")
        return Chat.at(self, snap)

    async def run(
        self,
        input: InputLike | None = None,
        *,
        snapshot_id: str | None = None,
        session_id: str | None = None,
        state: SessionState | dict[str, Any] | None = None,
        on_chunk: ChunkSink | None = None,
        config: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
    ) -> AgentOutput:
        """Run one turn (Go ``agent.Run``); a failed turn is returned in-band.

        Example:
            >>> out = await agent.run("Transfer $500 to savings")       # doctest: +SKIP
            >>> out.finish_reason                                       # doctest: +SKIP
            'interrupted'
        """
        return await self.invoke(
            as_input(input),
            make_init(snapshot_id, session_id, state),
            options=call_options(config, context),
            on_chunk=on_chunk,
        )

    async def run_text(self, text: str, **options: Unpack[RunOptions]) -> AgentOutput:
        """Run one turn with a user text message (Go ``agent.RunText``); `options` are `run`'s."""
        return await self.run(text, **options)

    # the twins call the verb by name: a subclass's override runs
    invoke_sync = twin(invoke)
    load_chat_sync = twin(load_chat)
    run_sync = twin(run)
    run_text_sync = twin(run_text)
    get_snapshot_sync = twin(get_snapshot)
    abort_sync = twin(abort)
    pending_sync = twin(pending)
    audit_sync = twin(audit)
    rules_sync = twin(rules)
    revoke_rule_sync = twin(revoke_rule)
    fork_sync = twin(fork)
    forks_sync = twin(forks)


AgentProtocol = BaseAgent
"""What callers drive: the verbs of `BaseAgent` (a name kept for readers of the protocol)."""

AgentEndpoint = BaseAgent
"""What a `Chat` drives (the name it had before every verb was declared here)."""
