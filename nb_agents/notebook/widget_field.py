"""`Field`: one form field, a widget and the JSON value it holds; `FieldError`, what a field refuses.

`nb_agents.notebook.fields.schema_field` makes them from JSON schemas.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from ..errors import InvalidArgumentError
from ..render._html import MUTED, NO_TYPESET, esc

__all__ = ["MISSING", "Field", "FieldError", "hint_html"]

MISSING: Any = object()
"""No value: the field starts from the schema's default (or empty)."""


class FieldError(InvalidArgumentError, ValueError):
    """A field holds something that is not a value at all (malformed JSON, an empty required field).

    ``short`` is the message shown beside the field ("required"); ``str()`` names the field too.
    """

    def __init__(self, message: str, *, short: str | None = None) -> None:
        super().__init__(message)
        self.short = short


_ERROR = "color:var(--jp-error-color1,#c62828);font-size:90%;padding-left:6px"
_HINT = f"{MUTED};padding-left:8px;max-width:32em"


class Field:
    """One form field: ``widget`` to show, ``get()`` for its JSON value.

    Attributes:
        widget: The control (or the box of an object's fields).
        error: Where a message about this field shows (`row` puts it beside the widget).
        children: The fields of an object field by property name.
        hint: The schema's ``description`` of the field, shown beside it by `row`.

    Example:
        >>> f = schema_field({"type": "integer", "minimum": 1}, 3, label="count")
        >>> f.get()
        3
    """

    def __init__(
        self,
        widget: Any,
        get: Callable[[], Any],
        controls: list[Any],
        *,
        children: dict[str, Field] | None = None,
        hint: str = "",
    ) -> None:
        self.widget = widget
        self._get = get
        self.controls = controls
        self.children = children or {}
        self.hint = hint
        self.error = widgets.HTML()
        self._row: Any = None

    @property
    def row(self) -> Any:
        """The widget with its hint and its error message beside it (what a form shows)."""
        if self._row is None:
            if self.children:
                self._row = widgets.VBox([self.widget, self.error])
            else:
                shown = [self.widget]
                if self.hint:
                    shown.append(widgets.HTML(value=hint_html(self.hint)))
                self._row = widgets.HBox(
                    [*shown, self.error], layout=widgets.Layout(flex_flow="row wrap", align_items="center")
                )
        return self._row

    def get(self) -> Any:
        """The value as JSON data; raises `FieldError` (also shown beside the field) if unreadable."""
        self.clear_errors()
        try:
            return self._get()
        except FieldError as exc:
            if not self.children:
                self.show_error(exc.short or exc.message)
            raise

    def set_disabled(self, disabled: bool) -> None:
        for control in self.controls:
            control.disabled = disabled

    def show_error(self, message: str) -> None:
        self.error.value = (
            f'<span class="nba-field-error {NO_TYPESET}" style="{_ERROR}">{esc(message)}</span>'
        )

    def clear_errors(self) -> None:
        self.error.value = ""
        for child in self.children.values():
            child.clear_errors()

    def find(self, path: tuple[Any, ...]) -> Field:
        """The deepest field along `path` (a pydantic error's ``loc``); this one if none matches."""
        if path and str(path[0]) in self.children:
            return self.children[str(path[0])].find(path[1:])
        return self

    def observe(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever any control's value changes."""
        for control in self.controls:
            control.observe(lambda _change: callback(), names="value")


def hint_html(text: str) -> str:
    """A field's hint (its schema description), escaped."""
    return f'<span class="nba-hint {NO_TYPESET}" style="{_HINT}">{esc(text)}</span>'
