"""Rendering results as text and escaped HTML (no widgets needed).

Model and tool text is always escaped: nothing a model says can run script
in a notebook.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chat import AgentResponse

__all__ = ["response_bundle", "response_text"]


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def response_text(res: AgentResponse) -> str:
    """A plain-text view of a response."""
    lines = [f"[{res.finish_reason}]"]
    if res.interrupts:
        for i in res.interrupts:
            lines.append(f"interrupt {i.name} (ref {i.ref}): input {_json(i.input)}")
            if i.data:
                lines.append(f"  data {_json(i.data)}")
    elif res.text:
        lines.append(res.text)
    if res.error is not None:
        lines.append(f"error {res.error.status}: {res.error.message}")
    return "\n".join(lines)


def response_bundle(res: AgentResponse) -> dict[str, str]:
    """``text/plain`` and escaped ``text/html`` for a response."""
    esc = html.escape
    parts = [f'<div class="nba-response"><div class="nba-finish">{esc(str(res.finish_reason))}</div>']
    if res.interrupts:
        for i in res.interrupts:
            parts.append(
                '<div class="nba-interrupt">'
                f"<b>{esc(i.name)}</b> <code>{esc(str(i.ref))}</code>"
                f"<pre>{esc(_json(i.input))}</pre>"
                + (f"<pre>{esc(_json(i.data))}</pre>" if i.data else "")
                + "</div>"
            )
    elif res.text:
        parts.append(f'<div class="nba-text">{esc(res.text)}</div>')
    if res.error is not None:
        parts.append(f'<div class="nba-error">{esc(str(res.error.status))}: {esc(res.error.message)}</div>')
    parts.append("</div>")
    return {"text/plain": response_text(res), "text/html": "".join(parts)}
