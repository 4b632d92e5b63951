"""`define_agent` and `define_custom_agent`: the two ways to make an `Agent`.

`define_agent` builds a prompt agent (a model with tools, Genkit's
``defineAgent``); `define_custom_agent` wraps any turn handler.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict, Unpack

from ._engine import Authorize, PromptTurn
from .agent import Agent
from .middleware import Middleware
from .models.base import Model
from .notify import OnPause
from .session import TurnHandler
from .stores.base import SessionStore
from .tools import Tool
from .toolsets import Toolset

__all__ = ["AgentOptions", "define_agent", "define_custom_agent"]


class AgentOptions(TypedDict, total=False):
    """The keyword arguments of `define_custom_agent` (`define_agent` takes them too)."""

    store: SessionStore | None
    description: str
    state_secret: str | bytes | None
    authorize: Authorize | None
    on_pause: OnPause | None


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
    on_pause: OnPause | None = None,
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
        on_pause: Called when a turn pauses, e.g. ``nba.notify.webhook(url, secret=...)``.

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
        decide=handler.decide_answers,
        on_pause=on_pause,
    )


def define_custom_agent(name: str, handler: TurnHandler, **options: Unpack[AgentOptions]) -> Agent:
    """Define an agent from a turn handler.

    The handler runs one turn: ``async def handler(inp, ctx) -> Message | str | None``.
    It reads and changes ``ctx.session`` (messages, custom state, artifacts)
    and may stream with ``ctx.send_chunk``. `options` are `define_agent`'s
    (``store``, ``description``, ``state_secret``, ``authorize``, ``on_pause``).

    Example:
        >>> async def count(inp, ctx):
        ...     await ctx.session.update_custom(lambda c: {"n": (c or {}).get("n", 0) + 1})
        ...     return "counted"
        >>> counter = define_custom_agent("counter", count)
    """
    return Agent(name, handler, **options)
