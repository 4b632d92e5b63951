"""The MIME bundle of a widget: its static text and HTML, and the live view beside them.

Jupyter shows the richest type it can: the widget in a live kernel, the text
and HTML in a saved notebook, on GitHub, under nbval. Static mode drops the
widget view so stored outputs stay deterministic.
"""

from __future__ import annotations

from typing import Any

from .._display import static_mode

__all__ = ["WIDGET_MIME", "WithStaticFallback"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


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
