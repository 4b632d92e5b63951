"""The HTML vocabulary every renderer shares: escaping, links, styles, local times, details.

Every piece of text that reaches HTML (a rendered page or an ipywidgets
``HTML`` widget, which JupyterLab writes with ``innerHTML``) goes through one
function, `esc`; every link through one policy, `safe_url` (only absolute
``http``, ``https`` and ``mailto`` URLs become links: `link_html`); and the
text of a widget's label (its ``description``, which ipywidgets typesets with
MathJax) through `widget_label`, so a ``$`` in a schema title stays a dollar.

Styles are inline and use JupyterLab's theme variables (with light fallbacks),
so outputs read in the light and dark themes, on GitHub and in nbviewer. Icons
are words or CSS shapes, never emoji, which many fonts lack. Every block of
model or tool text carries `NO_TYPESET`, the classes MathJax skips, so a
"$500 ... $200" never turns into formulas and a ``\\style{...}`` stays text.
"""

from __future__ import annotations

import html
import json
from datetime import datetime
from typing import Any

from .._display import static_mode

__all__ = [
    "BOX",
    "PRE",
    "ERROR",
    "MUTED",
    "NO_TYPESET",
    "SAFE_SCHEMES",
    "badge",
    "details",
    "esc",
    "ids_details",
    "link_html",
    "local_time",
    "muted",
    "pre",
    "safe_url",
    "to_json",
    "widget_label",
]

NO_TYPESET = "tex2jax_ignore mathjax_ignore"
"""The classes MathJax (2: ``tex2jax_ignore``; 3 and 4: ``mathjax_ignore``) never typesets."""

BOX = (
    "border:1px solid var(--jp-border-color2,#ccc);border-radius:6px;padding:8px 12px;margin:4px 0;"
    "color:var(--jp-content-font-color1,#222);background:var(--jp-layout-color0,#fff);max-width:52em"
)
ERROR = "color:var(--jp-error-color1,#c62828);white-space:pre-wrap"
MUTED = "color:var(--jp-content-font-color2,#666);font-size:90%"
PRE = (
    "margin:2px 0;padding:4px 6px;white-space:pre-wrap;word-break:break-word;font-size:85%;"
    "background:var(--jp-layout-color2,#f3f3f3);border-radius:4px"
)
_BADGE = (
    "display:inline-block;padding:0 6px;margin-right:6px;border-radius:8px;font-size:80%;"
    "font-weight:600;letter-spacing:.02em;vertical-align:1px;border:1px solid currentColor"
)
_TONES = {
    "wait": "color:var(--jp-warn-color0,#b26a00)",
    "ok": "color:var(--jp-success-color0,#2e7d32)",
    "no": "color:var(--jp-error-color0,#c62828)",
    "info": "color:var(--jp-brand-color1,#1976d2)",
    "muted": "color:var(--jp-content-font-color2,#666)",
}


SAFE_SCHEMES = ("http://", "https://", "mailto:")
"""The only link targets nb_agents renders as links (README: "links limited to http(s) and mailto")."""

_MATH = ("$", "\\")  # what MathJax needs to typeset anything: a dollar or a backslash


def esc(value: Any) -> str:
    """`value` as text, HTML-escaped (quotes too): the one way text enters HTML.

    Example:
        >>> esc('<img src=x onerror="alert(1)">')
        '&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'
    """
    return html.escape(str(value), quote=True)


def safe_url(url: Any) -> bool:
    """Whether `url` may become a link: an absolute http(s) or mailto URL (the one URL policy).

    Example:
        >>> safe_url("https://genkit.dev"), safe_url("javascript:alert(1)"), safe_url("data:text/html,x")
        (True, False, False)
    """
    if not isinstance(url, str):
        return False
    lowered = url.strip().lower()
    return lowered.startswith(SAFE_SCHEMES) and not any(c in lowered for c in "\n\r\t\x00")


def link_html(url: Any, text: Any = None) -> str:
    """`url` as a link that opens in a new tab, if `safe_url` allows it; else as plain text.

    Example:
        >>> link_html("javascript:alert(1)")
        '<code>javascript:alert(1)</code>'
    """
    shown = esc(url if text is None else text)
    if not safe_url(url):
        return f"<code>{shown}</code>" if text is None else shown
    return f'<a href="{esc(url.strip())}" target="_blank" rel="noopener noreferrer nofollow">{shown}</a>'


def widget_label(text: Any) -> tuple[str, bool]:
    """A widget ``description`` for `text`: ``(description, description_allow_html)``.

    ipywidgets typesets descriptions with MathJax ("$5 or $6" would turn into a
    formula); text with a ``$`` or a backslash is given as escaped HTML in a block
    MathJax skips, other text as it is (ipywidgets writes it with ``textContent``).

    Example:
        >>> widget_label("Amount")
        ('Amount', False)
        >>> widget_label("Fee in $")
        ('<span class="tex2jax_ignore mathjax_ignore">Fee in $</span>', True)
    """
    words = str(text)
    if not any(mark in words for mark in _MATH):
        return words, False
    return f'<span class="{NO_TYPESET}">{esc(words)}</span>', True


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def pre(value: Any) -> str:
    """A JSON value in a preformatted block (MathJax never looks inside ``pre``)."""
    return f'<pre style="{PRE}">{esc(to_json(value))}</pre>'


def muted(inner_html: str, tag: str = "div") -> str:
    return f'<{tag} style="{MUTED}">{inner_html}</{tag}>'


def badge(text: str, tone: str = "muted") -> str:
    """A small outlined label ("tool", "waiting", "approved"): text, no icon font needed."""
    return f'<span class="nba-badge" style="{_BADGE};{_TONES.get(tone, "")}">{esc(text)}</span>'


def details(summary_html: str, body_html: str, *, cls: str = "", open_: bool = False) -> str:
    """A collapsed ``<details>`` block."""
    attrs = f' class="{cls}"' if cls else ""
    return (
        f'<details{attrs}{" open" if open_ else ""} style="margin:2px 0">'
        f'<summary style="cursor:pointer">{summary_html}</summary>{body_html}</details>'
    )


def local_time(iso: str | datetime | None, *, now: datetime | None = None) -> str:
    """An ISO time as a short local time: ``14:02`` today, ``3 May 14:02`` before; "" if unknown.

    Static mode shows no times (stored outputs must not change from run to run).

    Example:
        >>> from datetime import datetime, timezone
        >>> at = datetime(2024, 5, 3, 12, 2, tzinfo=timezone.utc)
        >>> local_time(at, now=at.astimezone()) == at.astimezone().strftime("%H:%M")
        True
    """
    if iso is None or static_mode():
        return ""
    try:
        when = iso if isinstance(iso, datetime) else datetime.fromisoformat(str(iso).replace("Z", "+00:00"))
    except ValueError:
        return str(iso)
    local = when.astimezone() if when.tzinfo is not None else when
    today = (now or datetime.now().astimezone()).date()
    if local.date() == today:
        return local.strftime("%H:%M")
    return f"{local.day} {local.strftime('%b')} {local.strftime('%H:%M')}" + (
        f" {local.year}" if local.year != today.year else ""
    )


def ids_details(**values: str | None) -> str:
    """Ids and times, collapsed under "Details" (none in static mode: they change every run)."""
    if static_mode():
        return ""
    rows = [(k.replace("_", " "), v) for k, v in values.items() if v]
    if not rows:
        return ""
    body = "".join(f'<div><span style="{MUTED}">{esc(k)}</span> <code>{esc(v)}</code></div>' for k, v in rows)
    return details(muted("Details", "span"), f'<div style="{MUTED}">{body}</div>', cls="nba-ids")
