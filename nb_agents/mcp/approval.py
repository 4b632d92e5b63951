"""Which MCP tools `ToolApproval` holds: from the server's annotations, overridable.

MCP tools carry behaviour hints (``annotations``). nb_agents reads them so:

* a tool marked ``readOnlyHint: true`` runs without asking, unless it is also
  marked ``destructiveHint: true`` or ``openWorldHint: true``;
* any other tool (``destructiveHint``, ``openWorldHint``, or no marks at all) is
  held by `nb_agents.middleware.ToolApproval` until someone approves it.

Only explicit marks count: MCP's spec defaults ``openWorldHint`` to true when it
is absent, which would hold every read-only tool of a server that leaves it
out. Hints are the server's word, not a guarantee: ``approval=`` (the whole
server) and ``tool_approval=`` (one tool, by the server's name for it) override
them. Nothing is held unless the agent uses ``ToolApproval``.

Example:
    >>> needs_approval({"readOnlyHint": True}, "read_file")
    False
    >>> needs_approval({"readOnlyHint": False, "destructiveHint": True}, "write_file")
    True
    >>> needs_approval({"readOnlyHint": True}, "read_file", tool_approval={"read_file": True})
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["describe_hints", "needs_approval", "runs_freely"]


def runs_freely(annotations: Mapping[str, Any] | None) -> bool:
    """Whether the hints alone let a call run without approval."""
    hints = annotations or {}
    return (
        hints.get("readOnlyHint") is True
        and hints.get("destructiveHint") is not True
        and hints.get("openWorldHint") is not True
    )


def needs_approval(
    annotations: Mapping[str, Any] | None,
    tool: str,
    *,
    approval: bool | None = None,
    tool_approval: Mapping[str, bool] | None = None,
) -> bool:
    """Whether `ToolApproval` holds calls of `tool` (the server's name for it).

    Args:
        annotations: The tool's hints, as the server listed them.
        tool: The tool's name on the server.
        approval: The server-wide override: True holds every tool, False none,
            None reads the hints.
        tool_approval: Per-tool overrides; they win over `approval`.
    """
    if tool_approval is not None and tool in tool_approval:
        return bool(tool_approval[tool])
    if approval is not None:
        return approval
    return not runs_freely(annotations)


_WORDS = {
    "readOnlyHint": ("read-only", "may change things"),
    "destructiveHint": ("destructive", "not destructive"),
    "idempotentHint": ("idempotent", None),
    "openWorldHint": ("reaches outside (open world)", "closed world"),
}


def describe_hints(annotations: Mapping[str, Any] | None) -> str:
    """The hints in words, e.g. ``"may change things, destructive, idempotent"``; ``"no hints"``."""
    words = []
    for key, (yes, no) in _WORDS.items():
        value = (annotations or {}).get(key)
        if value is True:
            words.append(yes)
        elif value is False and no is not None:
            words.append(no)
    return ", ".join(words) or "no hints"
