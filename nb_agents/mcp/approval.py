"""Which MCP tools need a person before they run: from the server's annotations, if it is trusted.

MCP tools carry behaviour hints (``annotations``). MCP's spec says a client
must treat the annotations of a server it does not trust as untrusted: a
tool that claims ``readOnlyHint: true`` may delete. So:

* a server is untrusted unless it is marked ``trusted=True``
  (`MCPServer.stdio(..., trusted=True)`); every tool of an untrusted server
  needs a person's decision (it is held, with or without `ToolApproval`);
* of a trusted server, a tool marked ``readOnlyHint: true`` (and not
  ``destructiveHint`` or ``openWorldHint``) runs without asking; one marked
  ``destructiveHint: false`` is left to the agent's `ToolApproval`, if any;
  any other (``destructiveHint: true``, or no marks: the spec's default for
  ``destructiveHint`` is true) needs a person, with or without `ToolApproval`.

``approval=`` (the whole server) and ``tool_approval=`` (one tool, by the
server's name for it) are the developer's word and override both: True holds
the tool for a person, False lets it run without asking.

Example:
    >>> needs_approval({"readOnlyHint": True}, "read_file")
    True
    >>> needs_approval({"readOnlyHint": True}, "read_file", trusted=True)
    False
    >>> needs_approval({"readOnlyHint": False, "destructiveHint": True}, "write_file", trusted=True)
    True
    >>> needs_approval({"readOnlyHint": True}, "read_file", tool_approval={"read_file": False})
    False
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
    trusted: bool = False,
    approval: bool | None = None,
    tool_approval: Mapping[str, bool] | None = None,
) -> bool | None:
    """Whether calls of `tool` (the server's name for it) need a person (`Tool.needs_approval`).

    True: held for a person, with or without `ToolApproval`; False: never
    held; None: the agent's `ToolApproval`, if any, decides.

    Args:
        annotations: The tool's hints, as the server listed them.
        tool: The tool's name on the server.
        trusted: Whether the server's hints are believed (see the module docstring).
        approval: The server-wide override: True holds every tool, False none,
            None reads the hints.
        tool_approval: Per-tool overrides; they win over `approval`.
    """
    if tool_approval is not None and tool in tool_approval:
        return bool(tool_approval[tool])
    if approval is not None:
        return approval
    if not trusted:
        return True
    if runs_freely(annotations):
        return False
    if (annotations or {}).get("destructiveHint") is False:
        return None
    return True


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
