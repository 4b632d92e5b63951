"""Progress bars for the MCP tool calls of a streaming turn.

`progress_bars` folds one stream chunk into the bars shown so far: a chunk
carrying an MCP progress report (`nb_agents.mcp.progress`) replaces the bar of
its call (one per server, tool and call ref); any other chunk changes nothing.
`TurnView` and `ChatWidget` draw the bars above the streamed text while the
turn runs; the finished turn's rendering takes their place.
"""

from __future__ import annotations

from typing import Any

from ..mcp.progress import progress_html, progress_of

__all__ = ["progress_bars"]


def progress_bars(bars: dict[tuple[str, str, str], str], chunk: Any) -> dict[tuple[str, str, str], str]:
    """`bars` with the progress `chunk` reports, if it reports any (HTML by call).

    Example:
        >>> progress_bars({}, object())
        {}
    """
    report = progress_of(chunk)
    if report is None:
        return bars
    return {**bars, (report.server, report.tool, report.ref or ""): progress_html(report)}
