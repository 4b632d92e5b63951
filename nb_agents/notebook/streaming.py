"""The one loop that streams a turn into a widget: text as it comes, tool results, progress bars.

A form's answer, a partial answer and a chat box's message each stream their
turn the same way: `LiveOutput.follow` reads the turn's chunks and redraws one
HTML widget value after each (the tool results the round produced, an MCP
server's progress bars, the model's text so far, as markdown), and returns the
turn's response. What it showed stays readable from `tools` and `text` when the
turn fails, for the caller to keep beside the error.
"""

from __future__ import annotations

from collections.abc import Callable

from ..render import part_html, stream_html
from ..responses import AgentResponse
from ..turns import AgentTurn
from .progress import progress_bars

__all__ = ["LiveOutput"]


class LiveOutput:
    """Streams one turn into `show` (a widget value setter), after `prefix` and any earlier `tools`."""

    def __init__(self, show: Callable[[str], None], *, prefix: str = "", tools: str = "") -> None:
        self.show = show
        self.prefix = prefix
        self.tools = tools  # the tool results shown so far (html)
        self.text = ""  # the model's text so far
        self._bars: dict[tuple[str, str, str], str] = {}

    async def follow(self, turn: AgentTurn) -> AgentResponse:
        """Read `turn` to its end, showing it as it goes; its response (a failure raises)."""
        async for chunk in turn:
            self.text += chunk.text
            mc = chunk.model_chunk
            if mc is not None and mc.role == "tool":
                self.tools += "".join(part_html(p) for p in mc.content if p.tool_response is not None)
            self._bars = progress_bars(self._bars, chunk)  # MCP progress notifications
            self.show(self.prefix + self.tools + "".join(self._bars.values()) + stream_html(self.text))
        return await turn.response
