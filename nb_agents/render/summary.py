"""A paused tool call as a person reads it: a title, the question, the arguments.

`interrupt_summary` turns an interrupted call into a `Summary`: a title (the
pause data's ``title``, else the tool's name in words: "Transfer money"), the
question in prose (the pause data's ``summary``, ``question``, ``message``,
``details`` or ``prompt``, else the same keys of the input, else the tool's
description), the model's own words that came with the call, and the
arguments as labelled rows ("To account: savings"; labels from the schema's
titles, else the field name in words; each schema description beside its
value as a hint; amounts in the currency the schema names: "$500.00").
`summary_html` draws it, with the raw JSON behind a toggle; `changes_html`
draws what an edit changed; `value_words` says a value on one line ("Success:
yes · Transaction ID: txn-8"), as tool results are shown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..expiry import describe, expires_at
from ..interrupts import APPROVAL_PREFIX, held_for_approval
from ..types import Part
from ._html import MUTED, NO_TYPESET, badge, details, esc, pre
from .deadline import deadline_html
from .markdown import markdown_html

__all__ = [
    "Summary",
    "amount",
    "changes",
    "changes_html",
    "humanize",
    "interrupt_summary",
    "label_for",
    "summary_html",
    "value_words",
]

QUESTION_KEYS = ("summary", "question", "message", "details", "prompt", "description")
_ACRONYMS = {"id", "ids", "url", "uri", "api", "ip", "sql", "json", "html", "http", "pdf", "csv", "ssn"}
_ROW = "padding:1px 12px 1px 0;vertical-align:top;text-align:left"
_CURRENCIES = (
    ("$", re.compile(r"\$|\bdollars?\b|\busd\b", re.I)),
    ("€", re.compile(r"€|\beuros?\b|\beur\b", re.I)),
    ("£", re.compile(r"£|\bpounds sterling\b|\bgbp\b", re.I)),
)
_CODES = {"USD": "$", "EUR": "€", "GBP": "£"}


def humanize(name: str) -> str:
    """A field or tool name in words: ``toAccount`` -> "To account", ``user_id`` -> "User ID".

    Example:
        >>> humanize("toAccount"), humanize("transferMoney"), humanize("transaction_id")
        ('To account', 'Transfer money', 'Transaction ID')
    """
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name)
    words = [w for w in re.split(r"[\s_\-.]+", spaced) if w]
    if not words:
        return name
    out = [w.upper() if w.lower() in _ACRONYMS else w.lower() for w in words]
    if out[0] == out[0].lower():
        out[0] = out[0][:1].upper() + out[0][1:]
    return " ".join(out)


def label_for(name: str, prop: Any) -> str:
    """A field's label: its schema title, unless pydantic made that up from the name."""
    title = prop.get("title") if isinstance(prop, dict) else None
    generated = name.title().replace("_", " ")  # what pydantic writes when nobody gave a title
    if isinstance(title, str) and title.strip() and title != generated:
        return title
    return humanize(name)


def _currency(prop: Any) -> str | None:
    """The currency symbol a number's schema names (``format: "currency"`` or words in its
    title or description: "in dollars", "USD", "€"), or None."""
    if not isinstance(prop, dict) or prop.get("type") not in ("number", "integer"):
        return None
    code = prop.get("currency")
    if isinstance(code, str) and code.upper() in _CODES:
        return _CODES[code.upper()]
    if prop.get("format") in ("currency", "money"):
        return "$"
    words = " ".join(str(prop.get(k) or "") for k in ("title", "description"))
    return next((sym for sym, pattern in _CURRENCIES if pattern.search(words)), None)


def amount(value: Any, prop: Any) -> Any:
    """`value` as the amount its schema says it is ("$500.00"), else `value` unchanged.

    Example:
        >>> amount(500, {"type": "number", "description": "How much to move, in dollars"})
        '$500.00'
        >>> amount(500, {"type": "number"})
        500
    """
    sym = _currency(prop)
    if sym is None or isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return f"{'-' if value < 0 else ''}{sym}{abs(value):,.2f}"


@dataclass
class Summary:
    """What a form leads with (see the module docstring)."""

    name: str
    title: str
    kind: str  # "approval" (a call held for approval) or "question"
    question: str = ""
    note: str = ""  # the model's own text that came with the call
    rows: list[tuple[str, Any, str]] = field(default_factory=list)  # (label, value, help)
    raw: dict[str, Any] = field(default_factory=dict)
    mcp: dict[str, Any] | None = None  # the MCP server, tool and annotations a pause comes from
    expires_at: str | None = None  # the pause's deadline (``metadata.expiresAt``), if it has one
    on_expiry: str | None = None  # what applies at the deadline, in words
    asked: str = ""  # the question once answered ("The assistant asked to run ..."), if it differs


def _prose(source: Any) -> tuple[str, str | None]:
    if isinstance(source, dict):
        for key in QUESTION_KEYS:
            value = source.get(key)
            if isinstance(value, str) and value.strip() and not value.startswith(APPROVAL_PREFIX):
                return value.strip(), key
    return "", None


def interrupt_summary(
    part: Part,
    *,
    input_schema: dict[str, Any] | None = None,
    description: str | None = None,
    note: str = "",
    approval: bool | None = None,
) -> Summary:
    """The `Summary` of an interrupted call (schema and description: its tool's, when known).

    ``approval`` says whether the answer is a yes or no (default: only for calls held by `ToolApproval`).
    """
    tr = part.tool_request
    assert tr is not None
    data = (part.metadata or {}).get("interrupt")
    data = data if isinstance(data, dict) else {}
    held = held_for_approval(part)
    title = data.get("title") if isinstance(data.get("title"), str) else humanize(tr.name)
    question, _ = _prose(data)
    used: str | None = None
    asked = ""
    if not question:
        question, used = _prose(tr.input)
    if not question and held:
        question = f"The assistant wants to run `{tr.name}`. It runs only once you approve."
        asked = f"The assistant asked to run `{tr.name}`."
    if not question and description:
        question = description.strip()
    props = (input_schema or {}).get("properties") or {}
    rows: list[tuple[str, Any, str]] = []
    if isinstance(tr.input, dict):
        for key, value in tr.input.items():
            if key == used:
                continue
            prop = props.get(key) if isinstance(props, dict) else None
            hint = prop.get("description", "") if isinstance(prop, dict) else ""
            rows.append((label_for(key, prop), amount(value, prop), str(hint)))
    elif tr.input is not None:
        rows.append(("Input", tr.input, ""))
    raw = {"input": tr.input, **({"pause data": data} if data else {})}
    kind = "approval" if (held if approval is None else approval) else "question"
    mcp = data.get("mcp")
    origin = mcp if isinstance(mcp, dict) and "server" in mcp else None
    deadline = expires_at(part)
    return Summary(
        tr.name,
        str(title),
        kind,
        question,
        note.strip(),
        rows,
        raw,
        origin,
        expires_at=deadline,
        on_expiry=describe(part, brief=True) if deadline else None,
        asked=asked,
    )


def value_html(value: Any, depth: int = 0) -> str:
    """A JSON value for a person: text as text, yes/no, nested objects as nested rows."""
    if value is None:
        return f'<span style="{MUTED}">none</span>'
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return esc(int(value))
    if isinstance(value, int | float | str):
        return f'<span style="white-space:pre-wrap">{esc(value)}</span>'
    if depth >= 3:
        return pre(value)
    if isinstance(value, dict):
        return rows_html([(humanize(str(k)), v, "") for k, v in value.items()], depth + 1)
    if isinstance(value, list):
        if all(isinstance(v, str | int | float | bool) or v is None for v in value):
            return ", ".join(value_html(v, depth + 1) for v in value) or f'<span style="{MUTED}">empty</span>'
        items = "".join(f"<li>{value_html(v, depth + 1)}</li>" for v in value)
        return f'<ol style="margin:0;padding-left:1.4em">{items}</ol>'
    return esc(value)


def value_words(value: Any, limit: int = 120) -> str:
    """A JSON value in words, on one line: text as is, yes/no, "Key: value · Key: value".

    Example:
        >>> value_words({"success": True, "transactionId": "txn-8"})
        'Success: yes · Transaction ID: txn-8'
        >>> value_words({"error": "The user denied it."})
        'Error: The user denied it.'
    """
    if value is None:
        text = "none"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        text = str(int(value))
    elif isinstance(value, int | float | str):
        text = str(value)
    elif isinstance(value, dict):
        text = " · ".join(f"{humanize(str(k))}: {value_words(v, limit)}" for k, v in value.items()) or "{}"
    elif isinstance(value, list):
        text = ", ".join(value_words(v, limit) for v in value) or "empty"
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def rows_html(rows: list[tuple[str, Any, str]], depth: int = 0) -> str:
    """Labelled rows as a table (label, value), each hint (a schema description) beside its value."""
    if not rows:
        return ""
    body = "".join(
        f'<tr style="background:none"><th style="{_ROW};font-weight:600">{esc(label)}</th>'
        f'<td style="{_ROW}">{value_html(value, depth)}</td>'
        + (f'<td style="{_ROW};{MUTED}">{esc(hint)}</td>' if hint else "")
        + "</tr>"
        for label, value, hint in rows
    )
    # as in a live form in a saved page too: no zebra rows, no smaller table font
    style = "border-collapse:collapse;margin:2px 0;line-height:1.4;font-size:inherit;border:none"
    return f'<table class="nba-args {NO_TYPESET}" style="{style}">{body}</table>'


def summary_html(summary: Summary, *, raw: bool = True, state: str = "waiting", deadline: bool = True) -> str:
    """The summary as HTML: a badge and title, the question, the model's note, the arguments.

    Args:
        summary: What to draw.
        raw: Include the raw JSON, behind a toggle.
        state: ``"waiting"``, or what became of the question (the badge: "approved", "denied",
            "expired", ...; the question then reads in the past tense).
        deadline: Include the deadline line of a waiting question (a live form ticks its own).
    """
    tone, word = ("wait", "needs approval") if summary.kind == "approval" else ("wait", "needs an answer")
    if state != "waiting":
        tone, word = {"approved": "ok", "denied": "no", "expired": "no"}.get(state, "muted"), state
    head = (
        f'<div style="font-size:110%;margin-bottom:2px">{badge(word, tone)}'
        f'<b class="{NO_TYPESET}">{esc(summary.title)}</b></div>'
    )
    parts = [head]
    if summary.mcp is not None:
        parts.append(mcp_html(summary.mcp))
    question = summary.asked if state != "waiting" and summary.asked else summary.question
    if question:
        parts.append(markdown_html(question, cls="nba-question"))
    if summary.note:
        quote = "border-left:3px solid var(--jp-border-color1,#bbb);padding-left:8px;margin:4px 0"
        parts.append(
            f'<div class="nba-note" style="{quote}"><span style="{MUTED}">The assistant wrote</span>'
            f"{markdown_html(summary.note)}</div>"
        )
    parts.append(rows_html(summary.rows))
    if summary.expires_at and state == "waiting" and deadline:
        parts.append(deadline_html(summary.expires_at, summary.on_expiry))
    if raw and summary.raw:
        parts.append(details(f'<span style="{MUTED}">Raw JSON</span>', pre(summary.raw), cls="nba-raw"))
    return "".join(parts)


def _flatten(value: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if isinstance(value, dict) and value:
        out: dict[tuple[str, ...], Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, (*prefix, str(k))))
        return out
    return {prefix: value}


def changes(old: Any, new: Any, schema: dict[str, Any] | None = None) -> list[tuple[str, Any, Any]]:
    """What an edit changed, as (label, before, after) rows.

    Example:
        >>> changes({"amount": 5000, "toAccount": "savings"}, {"amount": 500, "toAccount": "savings"})
        [('Amount', 5000, 500)]
    """
    before, after = _flatten(old), _flatten(new)
    props = (schema or {}).get("properties") or {}
    missing = object()
    out = []
    for path in list(dict.fromkeys([*before, *after])):
        a, b = before.get(path, missing), after.get(path, missing)
        if a == b:
            continue
        top = props.get(path[0]) if path and isinstance(props, dict) else None
        label = " / ".join([label_for(path[0], top), *(humanize(p) for p in path[1:])]) if path else "Input"
        unit = top if len(path) == 1 else None
        out.append(
            (label, None if a is missing else amount(a, unit), None if b is missing else amount(b, unit))
        )
    return out


def changes_html(rows: list[tuple[str, Any, Any]]) -> str:
    """The changed arguments: "Amount 5000 → 500"."""
    if not rows:
        return ""
    body = "".join(
        f'<tr style="background:none"><th style="{_ROW};font-weight:600">{esc(label)}</th><td style="{_ROW}">'
        f'<s style="{MUTED}">{value_html(a)}</s> → <b>{value_html(b)}</b></td></tr>'
        for label, a, b in rows
    )
    return (
        f'<div class="nba-changes {NO_TYPESET}"><span style="{MUTED}">Your changes</span>'
        f'<table style="border-collapse:collapse">{body}</table></div>'
    )


def mcp_html(mcp: dict[str, Any]) -> str:
    """Which MCP server and tool a pause comes from, and the tool's annotations (hints)."""
    hints = mcp.get("annotations")
    marks = (
        ", ".join(f"{esc(str(k).removesuffix('Hint'))}: {esc(json.dumps(v))}" for k, v in hints.items())
        if isinstance(hints, dict) and hints
        else "no annotations"
    )
    where = f"MCP server <b>{esc(mcp['server'])}</b> · tool <code>{esc(mcp.get('tool', ''))}</code>"
    # an untrusted server's hints are its claims (MCP's spec): say so where they are shown
    claimed = "" if mcp.get("trusted", True) else "the server claims "
    tail = f" · {claimed}{marks}" if "annotations" in mcp else ""
    return f'<div class="nba-mcp {NO_TYPESET}" style="{MUTED}">{where}{tail}</div>'
