"""`AgentProtocol`: every verb a caller may use on an agent, local or remote.

Chats, notebook widgets and the HTTP server call agents only through these
verbs. Each agent class says what it does for each: `nb_agents.Agent` runs
them in this process, `nb_agents.RemoteAgent` over HTTP, and `BaseAgent`
answers the ones an agent cannot do with a clear `FailedPreconditionError`
naming the agent and the verb, so a caller never probes an agent with
``hasattr``: it calls the verb and reads the answer. Whether an agent can fork
is declared (``can_fork``), for a widget that offers the button only then.

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
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .chat import Chat
    from .listings import AuditTrail, PendingTurns
    from .rules import SessionRule, SessionRules
    from .tools import Tool
    from .types import AgentInit, AgentInput, AgentOutput, CallOptions, ChunkSink, SessionSnapshot

__all__ = ["AgentProtocol", "TurnStream"]


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


@runtime_checkable
class AgentProtocol(Protocol):
    """What every agent offers (see the module docstring for which agent does what)."""

    name: str
    description: str

    @property
    def tools(self) -> Mapping[str, Tool]: ...

    @property
    def can_fork(self) -> bool: ...

    async def invoke(
        self,
        input: AgentInput,
        init: AgentInit,
        *,
        options: CallOptions = ...,
        on_chunk: ChunkSink | None = None,
        abort_signal: asyncio.Event | None = None,
    ) -> AgentOutput: ...

    async def get_snapshot(
        self,
        snapshot_id: str | None = None,
        *,
        session_id: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> SessionSnapshot | None: ...

    async def abort(self, snapshot_id: str, *, context: dict[str, Any] | None = None) -> str | None: ...

    async def pending(self, *, context: dict[str, Any] | None = None) -> PendingTurns: ...

    async def audit(self, session_id: str, *, context: dict[str, Any] | None = None) -> AuditTrail: ...

    async def rules(self, session_id: str, *, context: dict[str, Any] | None = None) -> SessionRules: ...

    async def revoke_rule(
        self, session_id: str, rule_id: str, *, context: dict[str, Any] | None = None
    ) -> SessionRule: ...

    async def fork(
        self,
        snapshot_id: str | None = None,
        *,
        session_id: str | None = None,
        key: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> Chat: ...

    async def forks(
        self, session_id: str, *, context: dict[str, Any] | None = None
    ) -> list[SessionSnapshot]: ...
