"""`AgentSpec`: everything the engine needs to know of an agent, as plain data.

The facades (`nb_agents.Agent`, the server) build one; the engine reads only
this, so it never reaches back into them. A handler's tools and its input
check are declared here explicitly, not discovered on the handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..session import Session, TurnHandler
from ..tools import Tool
from ..types import AgentInput
from .ownership import Authorize

if TYPE_CHECKING:
    from ..notify import OnPause
    from ..stores.base import SessionStore
    from .signing import StateSigner

__all__ = ["AgentSpec", "Decide", "InputCheck", "StoredRules"]

InputCheck = Callable[[AgentInput, Session], None]
"""Rejects an input that can never run (raises an `NbAgentsError`) before anything is claimed."""

StoredRules = Callable[[], Awaitable[list[dict[str, Any]]]]
Decide = Callable[
    [AgentInput, Session, str | None, StoredRules], Awaitable[Mapping[tuple[str, str | None], Any]]
]
"""The handler's decision step for an answer: ``(input, session, principal, stored rules) -> decisions``.

Returns the `decision.Decision` for each answered call, by ``(name, ref)``; raises
an `NbAgentsError` to refuse the answer. Runs before the claim.
"""


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """An agent as the engine sees it.

    Attributes:
        name: The agent's name (in error messages).
        handler: Runs one turn.
        store: Where snapshots live; None for client-managed state.
        signer: Signs and checks client-managed state; None to leave it unsigned.
        tools: The handler's tools by name (what a resume may restart).
        validate_input: The handler's check of an input, run before any claim.
        authorize: The policy that lets a principal act on sessions others own.
        tracks_tools: The handler reports when it starts a tool (`TurnContext.tools_started`);
            otherwise a turn counts as having acted as soon as its handler runs.
        decide: The handler's decision step for an answer's calls (`Decide`), run before the claim.
        on_pause: Called (never awaited by the turn) when a turn ends paused (`nb_agents.notify`).
    """

    name: str
    handler: TurnHandler
    store: SessionStore | None = None
    signer: StateSigner | None = None
    tools: Mapping[str, Tool] = field(default_factory=dict)
    validate_input: InputCheck | None = None
    authorize: Authorize | None = None
    tracks_tools: bool = False
    decide: Decide | None = None
    on_pause: OnPause | None = None
