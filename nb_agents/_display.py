"""How results display: the registry every ``_repr_mimebundle_`` goes through.

Rendering sits above the values it renders (`nb_agents.render` turns them into
text and escaped HTML, `nb_agents.notebook` into widgets), so the values cannot
import their renderers. Each ``_repr_mimebundle_`` calls `bundle`, which finds
what is registered for the value's type:

* *static* renderers (text and HTML), registered by `nb_agents.render`, which
  ``import nb_agents`` loads;
* *live* renderers, used only in a running IPython kernel outside static
  mode: each returns a live view (a widget) for the value, or None. They come
  from plugins: every entry point of the group ``nb_agents.display`` is loaded
  on the first live display and registers its renderers (nb_agents' own plugin
  is `nb_agents.notebook`'s forms). A plugin that fails to load is logged and
  the static rendering is shown.

A value with a live view displays through `show` (its ``_ipython_display_``):
the view displays itself, so it can later replace its output with its static
record (a saved notebook then reads without a kernel).

Static mode (``NB_AGENTS_STATIC=1``) makes output deterministic, for stored
notebook outputs compared under nbval: no widgets, no ids, no timestamps.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = [
    "ENTRY_POINT_GROUP",
    "LIVE_OUTPUT_KEY",
    "STATIC_ENV",
    "bundle",
    "live_kernel",
    "live_view",
    "register",
    "show",
    "static_bundle",
    "static_mode",
]

STATIC_ENV = "NB_AGENTS_STATIC"
"""The environment variable that turns static (deterministic) rendering on."""

ENTRY_POINT_GROUP = "nb_agents.display"
"""The entry point group of live-display plugins (each a function that calls `register`)."""

LIVE_OUTPUT_KEY = "nb_agents"
"""The output-metadata key that marks a live view's output: its ``text/html`` is a record
that reads without the kernel (`nb_agents.jupyter_extension` keeps it, not the widget, on save)."""

Renderer = Callable[[Any], dict[str, Any] | None]
LiveRenderer = Callable[[Any], Any]
"""Returns a live view of the value (an object with ``_repr_mimebundle_``), or None."""

_STATIC: dict[type, Renderer] = {}
_LIVE: dict[type, LiveRenderer] = {}
_plugins_loaded = False
log = logging.getLogger("nb_agents.display")


def register(cls: type, *, static: Renderer | None = None, live: LiveRenderer | None = None) -> None:
    """Register how values of `cls` (and its subclasses) display.

    A live renderer returns a view (a widget) or None to fall back to the
    static rendering (a value that has nothing interactive to show).
    """
    if static is not None:
        _STATIC[cls] = static
    if live is not None:
        _LIVE[cls] = live


def static_mode() -> bool:
    """True when ``NB_AGENTS_STATIC`` is set to anything but ``""``/``0``/``false``/``no``.

    Example:
        >>> import os; os.environ["NB_AGENTS_STATIC"] = "1"; static_mode()
        True
        >>> del os.environ["NB_AGENTS_STATIC"]
    """
    return os.environ.get(STATIC_ENV, "").strip().lower() not in ("", "0", "false", "no")


def live_kernel() -> bool:
    """True when results may display as widgets: static mode is off and an IPython kernel runs."""
    if static_mode():
        return False
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and hasattr(shell, "kernel")


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()()
        except Exception:
            log.warning("the nb_agents display plugin %r failed to load", ep.value, exc_info=True)


def _find(table: dict[type, Any], cls: type) -> Any:
    for base in cls.__mro__:
        fn = table.get(base)
        if fn is not None:
            return fn
    return None


def live_view(value: Any) -> Any:
    """The live view (a widget) of `value` in a kernel, or None (no kernel, static mode, none registered)."""
    if not live_kernel():
        return None
    _load_plugins()
    live = _find(_LIVE, type(value))
    return live(value) if live is not None else None


def static_bundle(value: Any) -> dict[str, Any]:
    """The static text and HTML of `value` (its ``repr`` when nothing is registered)."""
    static = _find(_STATIC, type(value))
    out = static(value) if static is not None else None
    return out if out is not None else {"text/plain": repr(value)}


def bundle(value: Any) -> dict[str, Any]:
    """The MIME bundle for `value`: its live view's in a kernel, else its static one."""
    view = live_view(value)
    if view is not None:
        return dict(view._repr_mimebundle_())
    return static_bundle(value)


def show(value: Any) -> None:
    """Display `value` in IPython: its live view (which displays itself), else its static bundle."""
    from IPython.display import display

    view = live_view(value)
    if view is not None:
        display(view)  # type: ignore[no-untyped-call]  # IPython ships no type hints here
    else:
        display(static_bundle(value), raw=True)  # type: ignore[no-untyped-call]
