"""MCP progress notifications as stream chunks, and a progress bar for them.

While an MCP tool call runs, each ``notifications/progress`` the server sends
for it becomes one stream chunk of the turn::

    {"modelChunk": {"role": "tool", "content": [],
                    "custom": {"mcpProgress": {"server": "everything", "tool": "...",
                                               "ref": "call-1", "progress": 2,
                                               "total": 5, "message": "..."}}}}

The shape is chosen so that a client that does not know it loses nothing:
the chunk has no content parts (no text, no tool requests, no interrupts), and
``custom`` is Genkit's own free-form field of a model chunk, which Genkit's
clients carry along and otherwise ignore. `progress_of` reads one back;
`progress_html` draws it (the notebook views show a bar per running call).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..render._html import esc
from ..types import AgentStreamChunk, ModelResponseChunk

__all__ = ["PROGRESS_KEY", "Progress", "progress_chunk", "progress_html", "progress_of"]

PROGRESS_KEY = "mcpProgress"
"""The key of a progress report in a model chunk's ``custom``."""


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress report of a running MCP tool call.

    Attributes:
        server: The server's name.
        tool: The tool's name as the model calls it.
        ref: The call's ref, if the model gave one.
        progress: How far it is (grows with each report).
        total: The end value, when the server knows it.
        message: What the server says it is doing, if anything.
    """

    server: str
    tool: str
    ref: str | None
    progress: float
    total: float | None = None
    message: str | None = None

    @property
    def fraction(self) -> float | None:
        """``progress / total`` in [0, 1], or None without a total."""
        if not self.total:
            return None
        return max(0.0, min(1.0, self.progress / self.total))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"server": self.server, "tool": self.tool, "progress": self.progress}
        for key in ("ref", "total", "message"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


def progress_chunk(report: Progress) -> AgentStreamChunk:
    """The stream chunk that carries `report`."""
    return AgentStreamChunk(
        model_chunk=ModelResponseChunk(role="tool", content=[], custom={PROGRESS_KEY: report.to_json()})
    )


def progress_of(chunk: Any) -> Progress | None:
    """The progress report a stream chunk carries (an `AgentStreamChunk`, an `AgentChunk`,
    a `ModelResponseChunk`), or None for any other chunk."""
    mc = getattr(chunk, "model_chunk", chunk)
    custom = getattr(mc, "custom", None)
    data = custom.get(PROGRESS_KEY) if isinstance(custom, dict) else None
    if not isinstance(data, dict):
        return None
    try:
        return Progress(
            server=str(data["server"]),
            tool=str(data["tool"]),
            ref=data.get("ref"),
            progress=float(data["progress"]),
            total=float(data["total"]) if data.get("total") is not None else None,
            message=data.get("message"),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def progress_html(report: Progress) -> str:
    """A labelled progress bar (``<progress>``) for `report`, escaped (`nb_agents.render._html.esc`)."""
    frac = report.fraction
    if frac is not None:
        bar = f'<progress value="{frac:.3f}" max="1" style="width:14em;vertical-align:middle"></progress>'
        count = f"{_number(report.progress)} / {_number(report.total or 0)}"
    else:
        bar = '<progress style="width:14em;vertical-align:middle"></progress>'
        count = _number(report.progress)
    said = f" · {esc(report.message)}" if report.message else ""
    return (
        f'<div class="nba-progress" style="margin:2px 0">{bar} '
        f"<b>{esc(report.tool)}</b> on {esc(report.server)}: {esc(count)}{said}</div>"
    )
