"""The controls every nb_agents widget builds: buttons, and labels that stay text.

Every button the package shows is made by `button` (or `toggle`): its name is
its words alone. ipywidgets draws a button's ``icon`` as a Font Awesome glyph
(CSS content), which screen readers and browser automation read as part of the
name ("\\uf00c Approve"), so nb_agents' buttons carry no icon; their colour
(``button_style``) says what they do.

`labelled` sets a control's label (its ``description``) through
`nb_agents.render._html.widget_label`: ipywidgets typesets labels with MathJax,
so a label with a ``$`` is given as escaped HTML that MathJax skips.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ..render._html import widget_label

__all__ = ["REASON_HINT", "button", "labelled", "toggle"]

REASON_HINT = "optional: why (the assistant reads it)"  # the placeholder of a reason box

_SHORT = 24  # characters of a label that fit ipywidgets' default control width beside its input


def button(label: str, style: str = "", *, tooltip: str | None = None, min_width: str = "") -> Any:
    """A `widgets.Button` named `label` (no icon), as wide as its words.

    Example:
        >>> button("Approve", "success").description
        'Approve'
    """
    made = widgets.Button(description=label, button_style=style, tooltip=tooltip or label)
    made.layout.width = "auto"  # "Approve with changes" must not be cut short
    made.layout.flex = "0 0 auto"  # and a row that runs short of room wraps it, never squeezes it
    if min_width:
        made.layout.min_width = min_width
    return made


def toggle(label: str, *, tooltip: str | None = None) -> Any:
    """A `widgets.ToggleButton` named `label` (no icon), as wide as its words."""
    made = widgets.ToggleButton(description=label, tooltip=tooltip or label)
    made.layout.width = "auto"
    made.layout.flex = "0 0 auto"
    return made


def labelled(control: Any, label: str) -> Any:
    """`control` with `label` as its description (see the module docstring); returns it."""
    description, allow_html = widget_label(label)
    control.description_allow_html = allow_html
    control.description = description
    if allow_html and isinstance(control, widgets.Checkbox):
        control.tooltip = label  # its title would show the markup otherwise
    if len(label) > _SHORT and isinstance(control, widgets.Dropdown | widgets.IntText | widgets.FloatText):
        control.layout.width = "auto"  # ipywidgets' fixed width would squeeze the input under the label
    return control
