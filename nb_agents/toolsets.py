"""Toolsets: tools that are only known once something is asked for them.

A `Toolset` (an MCP server, say: `nb_agents.mcp.MCPServer`) goes in
``define_agent(..., tools=[...])`` beside ordinary tools. Its tools are listed
at the start of every turn (a toolset caches them and reconnects as it needs
to), so a prompt agent sends the model the current definitions. `ToolTable`
is the agent's live view of its tools by name: the fixed tools plus each
toolset's latest listing.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, create_model

from .errors import InvalidArgumentError
from .tools import Tool

__all__ = ["ToolTable", "Toolset", "is_toolset"]


@runtime_checkable
class Toolset(Protocol):
    """Tools that arrive from somewhere else (an MCP server), listed per turn."""

    name: str

    async def list_tools(self) -> Sequence[Tool]:
        """The current tools (connects on first use); raises an `NbAgentsError` naming the toolset."""
        ...

    def cached_tools(self) -> Sequence[Tool] | None:
        """The tools of the last listing, or None if never listed (no I/O)."""
        ...

    async def aclose(self) -> None:
        """Release what the toolset holds (a connection, a process)."""
        ...


def is_toolset(value: Any) -> bool:
    """Whether `value` is a `Toolset` rather than a `Tool`."""
    return not isinstance(value, Tool) and isinstance(value, Toolset)


@functools.cache
def _unlisted_input() -> type[BaseModel]:
    """Built on first use: a model built at import loads pydantic's plugins, and `import nb_agents`
    must stay fast."""
    return create_model("UnlistedToolInput", __config__=ConfigDict(extra="allow"))


def _unlisted(name: str) -> Tool:
    """A stand-in for a tool a toolset has not listed yet: it takes any input."""
    return Tool(None, name=name, input_model=_unlisted_input(), unpack_input=False)


class ToolTable(Mapping[str, Tool]):
    """An agent's tools by name: the fixed ones plus what its toolsets listed last.

    Before a toolset has ever been listed (the first thing after a kernel
    restart may be an answer to an interrupt), an unknown name gets a
    stand-in that accepts any input, so that the answer is checked against
    the real tool once the turn has listed it.
    """

    def __init__(self, fixed: Mapping[str, Tool], toolsets: Sequence[Toolset] = ()) -> None:
        self._fixed = dict(fixed)
        self.toolsets = list(toolsets)
        self._by_name: dict[str, Tool] = dict(fixed)
        self.rebuild([ts.cached_tools() for ts in self.toolsets])

    def rebuild(self, listings: Sequence[Sequence[Tool] | None]) -> bool:
        """Take the toolsets' listings (None: not listed yet); True when the tools changed."""
        merged = dict(self._fixed)
        owner = dict.fromkeys(self._fixed, "the agent's own tools")
        for ts, listed in zip(self.toolsets, listings, strict=True):
            for t in listed or ():
                if t.name in merged:
                    raise InvalidArgumentError(
                        f"tool name '{t.name}' of {ts.name!r} clashes with {owner[t.name]}; "
                        "give the server a prefix (MCPServer(..., prefix=True)) or leave one out"
                    )
                merged[t.name] = t
                owner[t.name] = repr(ts.name)
        changed = merged.keys() != self._by_name.keys() or any(
            merged[k] is not self._by_name[k] for k in merged
        )
        self._by_name = merged  # swapped whole: readers in other threads see one table or the other
        return changed

    def replace_fixed(self, tools: Sequence[Tool]) -> None:
        """Put `tools` in place of the agent's own tools of the same names (a fixed tool)."""
        unknown = [t.name for t in tools if t.name not in self._fixed]
        if unknown:
            raise InvalidArgumentError(
                f"the agent has no tool named {', '.join(map(repr, unknown))} to replace "
                f"(its tools: {', '.join(self._fixed) or 'none'})"
            )
        self._fixed.update({t.name: t for t in tools})
        self.rebuild([ts.cached_tools() for ts in self.toolsets])

    @property
    def listed(self) -> bool:
        """Whether every toolset has been listed at least once."""
        return all(ts.cached_tools() is not None for ts in self.toolsets)

    def __getitem__(self, name: str) -> Tool:
        found = self._by_name.get(name)
        if found is not None:
            return found
        if not self.listed:
            return _unlisted(name)
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)
