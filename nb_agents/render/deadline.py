"""A pause's deadline as a person reads it: "Expires in 59 min (14:02); then denied: ...".

Computed when drawn (a form shows the time left as of its rendering, and a
redraw, such as ``pending()``, shows it anew). In static mode (stored outputs)
no times are shown, only that there is a deadline and what happens at it.
"""

from __future__ import annotations

from datetime import datetime

from .._display import static_mode
from ..expiry import now as utc_now
from ..expiry import parse
from ._html import MUTED, NO_TYPESET, esc, local_time

__all__ = ["deadline_html", "deadline_parts", "deadline_words", "time_left"]

_WAIT = "color:var(--jp-warn-color0,#b26a00);font-weight:600"
_GONE = "color:var(--jp-error-color0,#c62828);font-weight:600"


def time_left(seconds: float) -> str:
    """A duration in words, rounded down: ``"45 s"``, ``"59 min"``, ``"2 h 5 min"``, ``"3 days"``.

    Example:
        >>> time_left(59 * 60 + 30), time_left(7500), time_left(3 * 86400 + 5)
        ('59 min', '2 h 5 min', '3 days')
    """
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 2 * 86400:
        h, m = divmod(s // 60, 60)
        return f"{h} h {m} min" if m else f"{h} h"
    return f"{s // 86400} days"


def deadline_parts(
    expires_at: str | None, on_expiry: str | None, *, now: datetime | None = None
) -> tuple[str, str, bool] | None:
    """The deadline line as (label, rest, expired), or None when the pause has none."""
    deadline = parse(expires_at) if expires_at else None
    if deadline is None:
        return None
    then = on_expiry or "denied"
    if static_mode():
        return "Deadline:", f"if nobody answers in time, {then}", False
    current = now or utc_now()
    clock = local_time(deadline, now=current.astimezone())
    left = (deadline - current).total_seconds()
    if left <= 0:
        return "Expired", f"at {clock}: {then}; an answer is no longer taken", True
    return "Expires", f"in {time_left(left)} (at {clock}); then {then}", False


def deadline_words(expires_at: str | None, on_expiry: str | None, *, now: datetime | None = None) -> str:
    """The deadline line as text ("" when the pause has none).

    Example:
        >>> from datetime import datetime, timezone
        >>> at = datetime(2026, 5, 3, 13, 1, tzinfo=timezone.utc)
        >>> deadline_words("2026-05-03T14:00:30.000Z", "denied", now=at)[:18]
        'Expires in 59 min '
    """
    found = deadline_parts(expires_at, on_expiry, now=now)
    return "" if found is None else f"{found[0]} {found[1]}"


def deadline_html(expires_at: str | None, on_expiry: str | None, *, now: datetime | None = None) -> str:
    """The deadline line as HTML, escaped ("" when the pause has none)."""
    found = deadline_parts(expires_at, on_expiry, now=now)
    if found is None:
        return ""
    label, rest, gone = found
    return (
        f'<div class="nba-deadline {NO_TYPESET}" style="margin:2px 0">'
        f'<span style="{_GONE if gone else _WAIT}">{esc(label)}</span> '
        f'<span style="{MUTED}">{esc(rest)}</span></div>'
    )
