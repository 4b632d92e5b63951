"""The MIME bundle of a widget, and the outputs it replaces with its static record.

Jupyter shows the richest type it can: the widget in a live kernel, the text
and HTML in a saved notebook, on GitHub, under nbval. But JupyterLab prefers
the widget even when its model is gone (a notebook reopened without the
kernel), and shows "Error displaying widget: model not found". So a widget
displayed in a cell (``_ipython_display_``) keeps the handle of its output,
and once it has nothing left to ask (a turn answered and finished) it calls
`WithStaticFallback.show_record`: the output is updated to the static record
alone, which is what the notebook then saves. Every such output is marked
(`OUTPUT_METADATA`), so the server extension `nb_agents.jupyter_extension`
can save a still-waiting form as its record too. Static mode drops the widget
view so stored outputs stay deterministic.
"""

from __future__ import annotations

from typing import Any

from .._display import LIVE_OUTPUT_KEY, static_mode

__all__ = ["OUTPUT_METADATA", "WIDGET_MIME", "WithStaticFallback"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
OUTPUT_METADATA = {LIVE_OUTPUT_KEY: {"live": True}}
"""Marks the outputs of nb_agents' widgets (whose text/html is a record that reads without a kernel)."""


class WithStaticFallback:
    """Mixin (before the ipywidgets base) for a widget with a static rendering.

    Subclasses implement `_static_bundle`; the widget view is added to it.
    """

    def _static_bundle(self) -> dict[str, Any]:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The widget, with the static text and HTML as fallback (static mode: no widget)."""
        bundle = dict(self._static_bundle())
        if not static_mode():
            view = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]  # the ipywidgets base
            if WIDGET_MIME in view:
                bundle[WIDGET_MIME] = view[WIDGET_MIME]
        return bundle

    def _ipython_display_(self) -> None:
        """Display in a cell, keeping the output's handle so `show_record` can replace it."""
        from IPython.display import display

        bundle = self._repr_mimebundle_()
        handle = display(bundle, raw=True, display_id=True, metadata=OUTPUT_METADATA)  # type: ignore[no-untyped-call]
        if handle is not None:
            self.__dict__.setdefault("_nba_handles", []).append(handle)

    @property
    def displayed(self) -> bool:
        """Whether this widget was displayed in a cell of its own (its output can be replaced)."""
        return bool(self.__dict__.get("_nba_handles"))

    def show_record(self) -> None:
        """Replace every cell output of this widget with its static record (no widget view)."""
        for handle in self.__dict__.get("_nba_handles", []):
            handle.update(self._static_bundle(), raw=True, metadata=OUTPUT_METADATA)
