"""Helpers for the widget tests: find controls in a widget tree, compare parts."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

import nb_agents as nba


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


def wire(parts: list[nba.Part]) -> list[dict[str, Any]]:
    return [p.to_wire() for p in parts]
