"""A timeline as HTML and text: turns, their model calls and tool runs to scale, the waits for a person.

`Turn`, `Step` and `Wait` are what `nb_agents.notebook.Timeline` loads; this
module draws them. Each turn is a header row (when, what started it, how long)
and a row per step with a bar placed within the turn (model calls in the
brand colour, tool runs in green, failures in red, calls that wait for a
person in amber); a wait is a dashed amber row between two turns, with how
long it lasted and who answered. A sub-agent's turns sit indented under the
tool row that ran them. Colours are JupyterLab's theme variables with light
fallbacks; every name and text is escaped. Static mode shows no clock times
and no lengths: the bars are then evenly spaced, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .._display import static_mode
from ._html import BOX, MUTED, NO_TYPESET, badge, esc

__all__ = ["Step", "Turn", "Wait", "duration_words", "timeline_html", "timeline_text"]


@dataclass
class Step:
    """One model call or tool run of a turn, or a call that waits for a person (``held``)."""

    kind: str  # "model", "tool" or "held"
    name: str
    at: float = 0.0  # ms from the turn's start
    ms: float = 0.0
    outcome: str = ""
    ref: str | None = None
    nested: list[Turn] = field(default_factory=list)  # a sub-agent's turns, under its tool
    agent: str = ""  # for a sub-agent's tool: the sub-agent's name


@dataclass
class Wait:
    """The wait for a person between a paused turn and the turn its answer resumed."""

    start: datetime | None
    end: datetime | None
    answers: list[tuple[str, str]] = field(default_factory=list)  # (call, how it was answered)

    @property
    def seconds(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max(0.0, (self.end - self.start).total_seconds())


@dataclass
class Turn:
    """One turn: when it ran, what started it, its steps, and the wait before it."""

    agent: str
    start: datetime | None
    ms: float | None
    finish: str
    said: str  # what started it: the user's words, or "an answer"
    steps: list[Step] = field(default_factory=list)
    wait: Wait | None = None
    snapshot_id: str | None = None
    number: int | None = None  # its place in its session, when the whole session is read


def duration_words(seconds: float | None) -> str:
    """A length in words: ``"812 ms"``, ``"4.2 s"``, ``"3 min 12 s"``, ``"2 h 5 min"``; "" if unknown.

    Example:
        >>> duration_words(0.8123), duration_words(4.21), duration_words(192), duration_words(7500)
        ('812 ms', '4.2 s', '3 min 12 s', '2 h 5 min')
    """
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def _clock(when: datetime | None) -> str:
    if when is None or static_mode():
        return ""
    return when.astimezone().strftime("%H:%M:%S")


_TRACK = (
    "position:relative;height:10px;border-radius:3px;background:var(--jp-layout-color2,#eee);min-width:8em"
)
_COLORS = {
    "model": "var(--jp-brand-color1,#1976d2)",
    "tool": "var(--jp-success-color1,#388e3c)",
    "failed": "var(--jp-error-color1,#d32f2f)",
    "held": "var(--jp-warn-color1,#f57c00)",
}
_CELL = (
    "padding:2px 8px 2px 0;vertical-align:middle;text-align:left;white-space:nowrap;overflow:hidden;"
    "text-overflow:ellipsis"
)
_SHRINK = "overflow:hidden"  # the columns' widths are the table's <colgroup>
_CODE = "white-space:nowrap"
_ROW = "background:transparent"  # not JupyterLab's zebra stripes: the turns and waits mark the rhythm
_DASH = "2px dashed var(--jp-warn-color1,#f57c00)"
_WAIT = f"border-top:{_DASH};border-bottom:{_DASH};background:var(--jp-layout-color1,#fff)"


def _bar(left: float, width: float, color: str) -> str:
    left = min(max(left, 0.0), 99.0)
    width = min(max(width, 1.0), 100.0 - left)
    place = f"left:{left:.1f}%;width:{width:.1f}%"
    inner = f"position:absolute;top:0;bottom:0;{place};border-radius:3px;background:{color}"
    return f'<div style="{_TRACK}"><div style="{inner}"></div></div>'


def _place(turn: Turn, i: int, step: Step) -> tuple[float, float]:
    """Where a step's bar goes in its turn's track, in percent (evenly, in order, without lengths)."""
    n = max(len(turn.steps), 1)
    if static_mode() or not turn.ms:
        return 100.0 * i / n, 100.0 / n
    if step.kind == "held":  # it waits from the end of the turn on
        return 98.5, 1.5
    return 100.0 * step.at / turn.ms, 100.0 * step.ms / turn.ms


def _step_label(step: Step) -> str:
    if step.kind == "model":
        return f'{badge("model", "info")}<code class="{NO_TYPESET}" style="{_CODE}">{esc(step.name)}</code>'
    tone = "wait" if step.kind == "held" else "no" if step.outcome in ("failed", "refused") else "ok"
    word = "waits" if step.kind == "held" else "sub-agent" if step.agent else "tool"
    ref = f' <span style="{MUTED}">{esc(step.ref)}</span>' if step.ref else ""
    return f'{badge(word, tone)}<code class="{NO_TYPESET}" style="{_CODE}">{esc(step.name)}</code>{ref}'


def _step_note(step: Step) -> str:
    if step.kind == "held":
        return "waits for a person" if step.outcome == "waits" else step.outcome
    if step.kind == "model":
        return "" if step.outcome == "stop" else step.outcome
    return {"done": "", "paused": "paused: asks a person", "refused": "refused (the model reads why)"}.get(
        step.outcome, step.outcome
    )


def _name(turn: Turn) -> str:
    return f"Turn {turn.number}" if turn.number is not None else "Turn"


def _turn_rows(turn: Turn, depth: int) -> list[str]:
    rows: list[str] = []
    pad = f"padding-left:{depth * 14}px"
    if turn.wait is not None:
        rows.append(_wait_row(turn.wait, pad))
    length = "" if static_mode() else duration_words(turn.ms / 1000 if turn.ms is not None else None)
    ended = "" if turn.finish in ("stop", "interrupted") else f" · ended {esc(turn.finish)}"
    said = turn.said if len(turn.said) <= 80 else turn.said[:77] + "…"
    who = f"<b>{esc(turn.agent)}</b> · " if turn.agent else ""
    rows.append(
        f'<tr class="nba-timeline-turn" style="{_ROW};border-top:1px solid var(--jp-border-color2,#ddd)">'
        f'<td style="{_CELL};{_SHRINK};{MUTED}">{esc(_clock(turn.start))}</td>'
        f'<td style="{_CELL};{pad}" colspan="2">{who}{_name(turn)}: <span class="{NO_TYPESET}">'
        f"{esc(said)}</span>{ended}</td>"
        f'<td style="{_CELL};{_SHRINK};{MUTED};text-align:right">{esc(length)}</td></tr>'
    )
    for i, step in enumerate(turn.steps):
        left, width = _place(turn, i, step)
        color = _COLORS["failed" if step.outcome in ("failed",) else step.kind]
        note = _step_note(step)
        took = "" if static_mode() or step.kind == "held" else duration_words(step.ms / 1000)
        rows.append(
            f'<tr class="nba-timeline-{step.kind}" style="{_ROW}"><td></td>'
            f'<td style="{_CELL};padding-left:{depth * 14 + 12}px">{_step_label(step)}'
            f"{f' <span style={chr(34)}{MUTED}{chr(34)}>{esc(note)}</span>' if note else ''}</td>"
            f'<td style="{_CELL};width:40%">{_bar(left, width, color)}</td>'
            f'<td style="{_CELL};{MUTED};text-align:right">{esc(took)}</td></tr>'
        )
        for sub in step.nested:
            rows += _turn_rows(sub, depth + 1)
    return rows


def _wait_row(wait: Wait, pad: str) -> str:
    took = "" if static_mode() else duration_words(wait.seconds)
    answers = "; ".join(
        f"<code class={NO_TYPESET!r}>{esc(call)}</code>: {esc(how)}" for call, how in wait.answers
    )
    said = f" · {answers}" if answers else ""
    return (
        f'<tr class="nba-timeline-wait" style="{_WAIT}">'
        f'<td style="{_CELL};{MUTED}">{esc(_clock(wait.start))}</td>'
        f'<td style="{_CELL};{pad};white-space:normal" colspan="2">{badge("person", "wait")}'
        f"Waited for a person{said}</td>"
        f'<td style="{_CELL};text-align:right"><b>{esc(took)}</b></td></tr>'
    )


def _totals(turns: Sequence[Turn]) -> tuple[int, int, int, float]:
    """Model calls and tool runs at every level; the waits of the top turns (a sub-agent's wait is theirs)."""
    models = tools = 0
    waits = sum(1 for turn in turns if turn.wait is not None)
    waited = sum(turn.wait.seconds or 0.0 for turn in turns if turn.wait is not None)
    todo = list(turns)
    while todo:
        turn = todo.pop()
        for step in turn.steps:
            models += step.kind == "model"
            tools += step.kind == "tool"
            todo += step.nested
    return models, tools, waits, waited


def timeline_html(turns: Sequence[Turn], *, title: str = "Timeline") -> str:
    """The timeline as HTML (see the module docstring)."""
    models, tools, waits, waited = _totals(turns)
    facts = [f"{len(turns)} turn{'s' * (len(turns) != 1)}", f"{models} model call{'s' * (models != 1)}"]
    facts.append(f"{tools} tool run{'s' * (tools != 1)}")
    if waits:
        spent = "" if static_mode() else f" ({duration_words(waited)})"
        facts.append(f"{waits} wait{'s' * (waits != 1)} for a person{spent}")
    rows: list[str] = []
    for turn in turns:
        rows += _turn_rows(turn, 0)
    if not rows:
        rows.append(f'<tr><td style="{_CELL};{MUTED}">No turn has run yet.</td></tr>')
    clock = "0.5em" if static_mode() else "5.5em"
    cols = f'<col style="width:{clock}"><col><col style="width:35%"><col style="width:5.5em">'
    table = (
        '<table style="border-collapse:collapse;width:100%;font-size:90%;table-layout:fixed">'
        f"<colgroup>{cols}</colgroup>{''.join(rows)}</table>"
    )
    return (
        f'<div class="nba-timeline {NO_TYPESET}" style="{BOX};max-width:60em">'
        f'<div style="margin-bottom:4px"><b>{esc(title)}</b> <span style="{MUTED}">· {esc(" · ".join(facts))}'
        f"</span></div>{table}</div>"
    )


def _text_lines(turn: Turn, depth: int) -> list[str]:
    pad = "  " * depth
    lines: list[str] = []
    if turn.wait is not None:
        took = "" if static_mode() else f" {duration_words(turn.wait.seconds)}"
        how = "; ".join(f"{call}: {words}" for call, words in turn.wait.answers)
        lines.append(f"{pad}~ waited for a person{took}{f' · {how}' if how else ''}")
    length = "" if static_mode() or turn.ms is None else f" ({duration_words(turn.ms / 1000)})"
    lines.append(f"{pad}{turn.agent + ' · ' if turn.agent else ''}{_name(turn)}: {turn.said}{length}")
    for step in turn.steps:
        took = "" if static_mode() or step.kind == "held" else f" {duration_words(step.ms / 1000)}"
        note = _step_note(step)
        ref = f" {step.ref}" if step.ref else ""
        lines.append(f"{pad}  {step.kind} {step.name}{ref}{took}{f' · {note}' if note else ''}")
        for sub in step.nested:
            lines += _text_lines(sub, depth + 2)
    return lines


def timeline_text(turns: Sequence[Turn], *, title: str = "Timeline") -> str:
    """The timeline as plain text, one line per turn, step and wait."""
    lines = [title]
    for turn in turns:
        lines += _text_lines(turn, 0)
    return "\n".join(lines)
