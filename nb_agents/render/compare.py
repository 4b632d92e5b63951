"""Two continuations of one paused turn, side by side: what each answer led to.

`Comparison` reads two histories (of responses or chats, typically a chat and
its fork): the messages they share up to the pause, then for each branch the
answer given to each interrupted call (in words: "transferMoney did not run;
the assistant was told: ..."), the tool calls that ran with their results, and
the replies. It renders as one flat table of escaped HTML, a column per branch
(and plain text), without widgets, toggles or ids. When the two final replies
differ in a few words only, those words are highlighted in each column;
replies that differ throughout are shown as they are (a diff would mark
everything).

The answers are read from the history: a call answered with an output (a
denial, a reply) carries ``interruptResponse``; a restarted call ran, and an
approval hold that ran was approved.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..interrupts import held_for_approval
from ..types import Message, Part
from ._html import MUTED, NO_TYPESET, badge, esc
from .answers import answer_verb
from .markdown import markdown_html
from .summary import interrupt_summary, summary_html, value_words
from .turns import interrupt_html, tool_outputs, tool_result_html

__all__ = ["Answer", "Branch", "Comparison", "diff_html", "paused_calls", "shared_prefix", "similar", "told"]

_COL = (
    "text-align:left;vertical-align:top;padding:6px 10px;border-top:1px solid var(--jp-border-color2,#ddd);"
    "width:50%"
)
_HEAD = "text-align:left;padding:6px 10px;font-weight:600"
_ROW = (
    "text-align:left;vertical-align:top;padding:6px 10px 6px 0;"
    "border-top:1px solid var(--jp-border-color2,#ddd);"
)
_DEL = "background:rgba(198,40,40,.16);color:inherit;text-decoration:none;border-radius:3px;padding:0 1px"
_INS = "background:rgba(46,125,50,.18);color:inherit;text-decoration:none;border-radius:3px;padding:0 1px"
_DIFF_TEXT = (
    "text-align:left;vertical-align:top;padding:4px 10px;white-space:pre-wrap;line-height:1.5;"
    "border-top:1px solid var(--jp-border-color2,#ddd)"
)
_TONE = {"approved": "ok", "denied": "no", "answered": "info", "waiting": "wait"}
_SIMILAR = 0.5  # the share of words two replies must have in common to be shown as a diff


def _key(msg: Message) -> str:
    """A message as compared across branches: its content without part metadata
    (an answered call's marks differ from a waiting one's)."""
    parts = [{k: v for k, v in p.to_wire().items() if k != "metadata"} for p in msg.content]
    return json.dumps([msg.role, parts], sort_keys=True, default=str)


def shared_prefix(a: list[Message], b: list[Message]) -> int:
    """How many leading messages the two histories share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if _key(x) != _key(y):
            break
        n += 1
    return n


@dataclass
class Answer:
    """The answer one branch gave to one interrupted call."""

    name: str
    verb: str  # approved, denied, answered, or waiting (not answered in this branch)
    ran: bool  # the tool itself ran (a restart), rather than the answer standing in for it
    value: Any = None


@dataclass
class Branch:
    """One continuation: where it goes on from the pause."""

    label: str
    messages: list[Message]
    session_id: str | None = None
    snapshot_id: str | None = None
    answers: list[Answer] = field(default_factory=list)

    @property
    def final_text(self) -> str:
        for msg in reversed(self.messages):
            if msg.role == "model" and msg.text:
                return msg.text
        return ""


def _answers(pause: Message | None, after: list[Message]) -> list[Answer]:
    if pause is None:
        return []
    responses: dict[tuple[str, str | None], Part] = {}
    for msg in after:
        if msg.role != "tool":
            continue
        for p in msg.content:
            if p.tool_response is not None:
                responses.setdefault((p.tool_response.name, p.tool_response.ref), p)
        break  # the first tool message holds the answers to the pause
    out = []
    for p in paused_calls(pause):
        tr = p.tool_request
        assert tr is not None
        found = responses.get((tr.name, tr.ref))
        if found is None or found.tool_response is None:
            out.append(Answer(tr.name, "waiting", False))
            continue
        value = found.tool_response.output
        if (found.metadata or {}).get("interruptResponse"):
            out.append(Answer(tr.name, answer_verb("respond", value), False, value))
        else:
            held = held_for_approval(p.with_metadata(interrupt=_pause_data(p)))
            out.append(Answer(tr.name, "approved" if held else "answered", True, value))
    return out


def _tokens(text: str) -> list[str]:
    """Words, spaces and marks; an amount ("$1,500.00") is one word."""
    return re.findall(r"\s+|[$€£]?\d(?:[\d,.]*\d)?|\w+|[^\w\s]", text)


def _chunks(a: str, b: str) -> list[tuple[bool, str, str]]:
    """The two texts as ``(same, a's words, b's words)`` runs, word by word.

    A change next to a change is one change, also across a lone space or a
    punctuation mark between them ("Done: sent" against "Nothing: not"), so
    that each side reads as phrases rather than as confetti.
    """
    ta, tb = _tokens(a), _tokens(b)
    chunks: list[tuple[bool, str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        same, old, new = op == "equal", "".join(ta[i1:i2]), "".join(tb[j1:j2])
        if chunks and not same and not chunks[-1][0]:
            chunks[-1] = (False, chunks[-1][1] + old, chunks[-1][2] + new)
        elif not same and len(chunks) >= 2 and chunks[-1][0] and _glue(chunks[-1][1]) and not chunks[-2][0]:
            glue = chunks.pop()[1]
            chunks[-1] = (False, chunks[-1][1] + glue + old, chunks[-1][2] + glue + new)
        else:
            chunks.append((same, old, new))
    return chunks


def similar(a: str, b: str) -> bool:
    """Whether two texts share enough words that highlighting what differs helps the reader.

    Example:
        >>> similar("Sent $500 to savings.", "Sent $250 to savings."), similar("Done.", "Nothing was sent.")
        (True, False)
    """
    if not a or not b:
        return False
    ta, tb = _tokens(a), _tokens(b)
    return difflib.SequenceMatcher(None, ta, tb, autojunk=False).ratio() >= _SIMILAR


def told(value: Any) -> str:
    """What a call's answer told the model, in words (an error's message alone)."""
    if isinstance(value, dict) and set(value) == {"error"} and isinstance(value["error"], str):
        return value["error"]
    return value_words(value, 160)


def _glue(text: str) -> bool:
    return len(text) <= 3 and not any(c.isalnum() for c in text)


def _side(chunks: list[tuple[bool, str, str]], which: int, tag: str, style: str) -> str:
    out = []
    for chunk in chunks:
        words = chunk[which]
        if chunk[0]:
            out.append(esc(words))
        elif words:
            out.append(f'<{tag} style="{style}">{esc(words)}</{tag}>')
    return "".join(out) or f'<span style="{MUTED}">(no text)</span>'


def diff_html(a: str, b: str, *, labels: tuple[str, str] = ("A", "B")) -> str:
    """Two texts one above the other, each with the words only it says highlighted.

    `a`'s own words are marked as deleted (``<del>``), `b`'s as inserted
    (``<ins>``); the words both say are plain.

    Example:
        >>> out = diff_html("Sent $500.", "Cancelled $500.")
        >>> out.count("<del"), out.count("<ins")
        (1, 1)
    """
    chunks = _chunks(a, b)
    rows = []
    for label, which, tag, style, cls in ((labels[0], 1, "del", _DEL, "a"), (labels[1], 2, "ins", _INS, "b")):
        rows.append(
            f'<tr class="nba-diff-{cls}"><th style="{_ROW}{MUTED}">{esc(label)}</th>'
            f'<td class="{NO_TYPESET}" style="{_DIFF_TEXT}">{_side(chunks, which, tag, style)}</td></tr>'
        )
    return (
        '<table class="nba-diff" style="border-collapse:collapse;width:100%;table-layout:fixed">'
        f'<colgroup><col style="width:7em"><col></colgroup>{"".join(rows)}</table>'
    )


class Comparison:
    """Two continuations of one pause, side by side (what `nb_agents.notebook.compare` shows).

    Attributes:
        a, b: The two `Branch` values, each with its answers.
        shared: The messages both histories share (up to and including the pause).
        pause: The model message that paused (the last shared one), or None.

    Example:
        >>> from nb_agents.types import Message
        >>> ask = Message.model_validate({"role": "user", "content": [{"text": "hi"}]})
        >>> one = Message.model_validate({"role": "model", "content": [{"text": "Yes"}]})
        >>> two = Message.model_validate({"role": "model", "content": [{"text": "No"}]})
        >>> c = Comparison(Branch("A", [ask, one]), Branch("B", [ask, two]))
        >>> len(c.shared), c.a.final_text, c.b.final_text
        (1, 'Yes', 'No')
    """

    def __init__(self, a: Branch, b: Branch) -> None:
        n = shared_prefix(a.messages, b.messages)
        self.shared = a.messages[:n]
        last = self.shared[-1] if self.shared else None
        self.pause = last if last is not None and last.role == "model" and paused_calls(last) else None
        a.answers = _answers(self.pause, a.messages[n:])
        b.answers = _answers(self.pause, b.messages[n:])
        self.a, self.b = a, b
        self._n = n
        texts = (self._last_reply(a), self._last_reply(b))
        self._diff = _chunks(*texts) if similar(*texts) else None

    def after(self, branch: Branch) -> list[Message]:
        """The messages of `branch` after the shared ones."""
        return branch.messages[self._n :]

    # -- HTML ------------------------------------------------------------------------------
    def _answers_html(self, branch: Branch) -> str:
        if not branch.answers:
            return f'<span style="{MUTED}">no answer</span>'
        rows = []
        for ans in branch.answers:
            word = {"waiting": "not answered yet"}.get(ans.verb, ans.verb)
            what = f'<code class="{NO_TYPESET}">{esc(ans.name)}</code>'
            if ans.verb == "waiting":
                tail = ""
            elif ans.ran:
                tail = " ran"
            else:
                said = f"; the assistant was told: “{esc(told(ans.value))}”"
                tail = f' did not run<span class="{NO_TYPESET}" style="{MUTED}">{said}</span>'
            rows.append(
                f'<div style="margin:2px 0">{badge(word, _TONE.get(ans.verb, "info"))}{what}{tail}</div>'
            )
        return "".join(rows)

    def _tools_html(self, branch: Branch) -> str:
        after = self.after(branch)
        results = tool_outputs(after)
        rows = []
        if self.pause is not None:  # the paused calls, as each branch settled them
            for p, ans in zip(paused_calls(self.pause), branch.answers, strict=False):
                assert p.tool_request is not None
                if ans.ran:
                    found = results.get((p.tool_request.name, p.tool_request.ref))
                    rows.append(tool_result_html(p, found, toggle=False))
        for m in after:
            if m.role != "model":
                continue
            for p in m.content:
                if p.tool_request is None:
                    continue
                if p.is_interrupt:
                    rows.append(interrupt_html(p))
                else:
                    key = (p.tool_request.name, p.tool_request.ref)
                    if key in results:
                        rows.append(tool_result_html(p, results[key], toggle=False))
                    else:
                        rows.append(tool_result_html(p, toggle=False))
        return "".join(rows) or f'<span style="{MUTED}">no tool ran</span>'

    def _last_reply(self, branch: Branch) -> str:
        texts = [m.text for m in self.after(branch) if m.role == "model" and m.text]
        return texts[-1] if texts else ""

    def _replies_html(self, branch: Branch) -> str:
        texts = [m.text for m in self.after(branch) if m.role == "model" and m.text]
        if not texts:
            return f'<span style="{MUTED}">no reply yet</span>'
        shown = [markdown_html(t, cls="nba-text") for t in texts]
        if self._diff is not None:  # a few words differ: highlight them in the final reply
            which, tag, style = (1, "del", _DEL) if branch is self.a else (2, "ins", _INS)
            words = _side(self._diff, which, tag, style)
            shown[-1] = (
                f'<div class="nba-diff nba-text {NO_TYPESET}" style="white-space:pre-wrap">{words}</div>'
            )
        return "".join(shown)

    def _cells(self, title: str, render: Any) -> str:
        return (
            f'<tr style="background:none"><th style="{_ROW}{MUTED}">{esc(title)}</th>'
            f'<td class="nba-branch-a" style="{_COL}">{render(self.a)}</td>'
            f'<td class="nba-branch-b" style="{_COL}">{render(self.b)}</td></tr>'
        )

    def html(self, *, pause: bool = True) -> str:
        """The comparison as escaped HTML: the pause (unless `pause` is False), then a column per branch."""
        if not pause:
            head = ""
        elif self.pause is not None:
            asked = "".join(
                '<div class="nba-interrupt" style="margin:4px 0">'
                + summary_html(
                    interrupt_summary(p.with_metadata(interrupt=_pause_data(p))), raw=False, state="2 answers"
                )
                + "</div>"
                for p in paused_calls(self.pause)
            )
            head = f'<div style="{MUTED}">Both continue from this pause:</div>{asked}'
        else:
            head = f'<div style="{MUTED}">These two histories share {len(self.shared)} messages.</div>'
        labels = (
            '<tr style="background:none"><th></th>'
            f'<th class="nba-label-a" style="{_HEAD}">{esc(self.a.label)}</th>'
            f'<th class="nba-label-b" style="{_HEAD}">{esc(self.b.label)}</th></tr>'
        )
        table = (
            '<table class="nba-compare-table" style="border-collapse:collapse;width:100%;table-layout:fixed;'
            'font-size:inherit;border:none">'
            '<colgroup><col style="width:7em"><col><col></colgroup>'
            f"{labels}{self._cells('Answer', self._answers_html)}{self._cells('Tools', self._tools_html)}"
            f"{self._cells('Reply', self._replies_html)}</table>"
        )
        note = (
            f'<div style="{MUTED};margin-top:4px">Highlighted: the words only that reply says.</div>'
            if self._diff is not None
            else ""
        )
        box = (
            "border:1px solid var(--jp-border-color2,#ccc);border-radius:6px;padding:8px 12px;margin:4px 0;"
            "color:var(--jp-content-font-color1,#222);background:var(--jp-layout-color0,#fff);max-width:72em"
        )
        return f'<div class="nba-compare" style="{box}">{head}{table}{note}</div>'

    def text(self) -> str:
        """The comparison in plain text."""
        lines = []
        for branch in (self.a, self.b):
            lines.append(f"{branch.label}:")
            for ans in branch.answers:
                ran = "ran" if ans.ran else f"did not run; the assistant was told: {told(ans.value)}"
                lines.append(f"  {ans.name}: {ans.verb}" + ("" if ans.verb == "waiting" else f" ({ran})"))
            lines.append(f"  reply: {branch.final_text or '(none yet)'}")
        return "\n".join(lines)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/plain": self.text(), "text/html": self.html()}

    def __repr__(self) -> str:
        return f"Comparison({self.a.label!r}, {self.b.label!r}, shared={len(self.shared)})"


def paused_calls(pause: Message) -> list[Part]:
    """The calls of a paused model message that waited for an answer (waiting or answered since)."""
    return [p for p in pause.tool_requests if {"interrupt", "resolvedInterrupt"} & set(p.metadata or {})]


def _pause_data(part: Part) -> Any:
    """What the call paused with: its ``interrupt`` data, or (once answered) ``resolvedInterrupt``."""
    meta = part.metadata or {}
    return meta.get("interrupt") or meta.get("resolvedInterrupt") or True
