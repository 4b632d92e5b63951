"""Helpers for the MCP tests: scripted model turns, widget lookups, a tool output."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from nb_agents.testing import ScriptedModel


def widgets_of(root: Any) -> list[Any]:
    """Every widget under `root`, depth first."""
    out = [root]
    for child in getattr(root, "children", ()):
        out += widgets_of(child)
    return out


def control(root: Any, label: str) -> Any:
    """The first input control under `root` whose label starts with `label`."""
    for w in widgets_of(root):
        if not isinstance(w, widgets.Button | widgets.ToggleButton) and str(
            getattr(w, "description", "")
        ).startswith(label):
            return w
    raise LookupError(f"no control labelled {label!r}")


def html_of(root: Any) -> str:
    """All HTML shown under `root`, joined."""
    return "".join(w.value for w in widgets_of(root) if isinstance(w, widgets.HTML))


def last_tool_output(model: ScriptedModel) -> Any:
    """What the last tool message the model was sent says (the first response's output)."""
    for msg in reversed(model.requests[-1].messages):
        if msg.role == "tool":
            resp = msg.content[0].tool_response
            assert resp is not None
            return resp.output
    raise AssertionError("the model was sent no tool message")
