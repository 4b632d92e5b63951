"""The HTML vocabulary every renderer shares: escaping, styles, local times, details.

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
    "badge",
    "details",
    "esc",
    "ids_details",
    "local_time",
    "muted",
    "pre",
    "to_json",
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


def esc(value: Any) -> str:
    """`value` as text, HTML-escaped (quotes too)."""
    return html.escape(str(value), quote=True)


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
