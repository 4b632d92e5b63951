"""Which agent asks: the line that heads a question from a sub-agent, and its static rendering.

A call that waits inside a sub-agent (`nb_agents.nested`) is shown as the
question of the sub-agent's own call, headed by who asks: "Asked by sub-agent
**worker** (via manager)". Agent names come from the pause data, which
nb_agents writes; they are escaped like everything else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..interrupts import AgentInterrupt
from ..nested import interrupts_of, tool_for
from ..types import Part
from ._html import NO_TYPESET, badge, esc
from .summary import interrupt_summary, summary_html

__all__ = ["asked_by_html", "asked_by_text", "nested_interrupts_html", "nested_interrupts_text"]

_LINE = "margin-bottom:4px;color:var(--jp-content-font-color1,#222)"


def asked_by_text(path: Sequence[str]) -> str:
    """``Asked by sub-agent worker (via manager)``; "" for the agent's own calls."""
    if not path:
        return ""
    via = f" (via {' > '.join(path[:-1])})" if len(path) > 1 else ""
    return f"Asked by sub-agent {path[-1]}{via}"


def asked_by_html(path: Sequence[str]) -> str:
    """The line that heads a sub-agent's question in a form or a record; "" for the agent's own calls."""
    if not path:
        return ""
    via = ""
    if len(path) > 1:
        via = " <span>(via " + " &rsaquo; ".join(f"<b>{esc(p)}</b>" for p in path[:-1]) + ")</span>"
    return (
        f'<div class="nba-asked-by {NO_TYPESET}" style="{_LINE}">{badge("sub-agent", "info")}'
        f"Asked by <b>{esc(path[-1])}</b>{via}</div>"
    )


def _summary(i: AgentInterrupt, tools: Mapping[str, Any] | None, note: str) -> Any:
    tool = tool_for(tools or {}, i)
    return interrupt_summary(
        i.part,
        input_schema=getattr(tool, "input_schema", None),
        description=getattr(tool, "description", None),
        note=note,
    )


def nested_interrupts_html(part: Part, tools: Mapping[str, Any] | None, note: str, box: str) -> str:
    """A paused call that waits on a sub-agent, as the sub-agent's own questions, each headed by who asks."""
    rows = []
    for n, i in enumerate(interrupts_of([part])):
        summary = _summary(i, tools, note if n == 0 else "")
        rows.append(
            f'<div class="nba-interrupt" style="{box}">{asked_by_html(i.path)}{summary_html(summary)}</div>'
        )
    return "".join(rows)


def nested_interrupts_text(part: Part, tools: Mapping[str, Any] | None) -> str:
    """The same in plain text: who asks, the title, the question, the arguments."""
    lines: list[str] = []
    for i in interrupts_of([part]):
        s = _summary(i, tools, "")
        need = "needs approval" if s.kind == "approval" else "needs an answer"
        lines.append(f"{asked_by_text(i.path)}: {s.title} ({need})")
        if s.question:
            lines.append(f"  {s.question}")
        lines += [f"  {label}: {value}" for label, value, _ in s.rows]
    return "\n".join(lines)
