"""Rendering results as plain text and escaped HTML (no widgets needed).

Every public result's ``_repr_mimebundle_`` comes here: responses and
outputs, messages, snapshots, the list `Agent.pending` returns and the audit
trail. The package has one module per concern:

* `nb_agents.render.markdown`: model text as markdown (raw HTML off, links
  limited to http(s) and mailto, never typeset by MathJax);
* `nb_agents.render.summary`: a paused call as a person reads it (title,
  question, the model's words, labelled arguments, raw JSON behind a toggle);
* `nb_agents.render.turns`: parts, messages and turns ("You", "Assistant",
  tool rows, ids and times collapsed);
* `nb_agents.render.answers`: answers in words ("Approved by ana at 14:02");
* `nb_agents.render.tables`: snapshots, pending turns and the audit table.

Model and tool text is always escaped: nothing a model, a tool or a user says
can run script in a notebook. Static mode (``NB_AGENTS_STATIC=1``) makes the
output deterministic, so stored notebook outputs compare equal under nbval:
no ids, no timestamps (and, in `nb_agents.notebook`, no widgets).
"""

from __future__ import annotations

from .._display import STATIC_ENV, register, static_mode
from ..listings import AuditTrail, PendingTurn, PendingTurns
from ..responses import AgentResponse
from ..rules import SessionRules
from ..types import AgentOutput, Message, SessionSnapshot
from ._html import NO_TYPESET, local_time
from .answers import answer_line, answer_verb, record_words
from .markdown import markdown_html, safe_link
from .summary import Summary, changes, changes_html, humanize, interrupt_summary, label_for, summary_html
from .tables import audit_bundle, audit_words, pending_bundle, rules_bundle, snapshot_bundle
from .turns import (
    ROLE_NAMES,
    error_html,
    interrupt_html,
    interrupt_text,
    message_bundle,
    output_bundle,
    output_html,
    output_text,
    part_html,
    response_bundle,
    response_text,
    stream_html,
    tool_result_html,
    tools_of,
)

__all__ = [
    "NO_TYPESET",
    "ROLE_NAMES",
    "STATIC_ENV",
    "Summary",
    "answer_line",
    "answer_verb",
    "audit_bundle",
    "rules_bundle",
    "audit_words",
    "changes",
    "changes_html",
    "error_html",
    "humanize",
    "interrupt_html",
    "interrupt_summary",
    "interrupt_text",
    "label_for",
    "local_time",
    "markdown_html",
    "message_bundle",
    "output_bundle",
    "output_html",
    "output_text",
    "part_html",
    "pending_bundle",
    "record_words",
    "response_bundle",
    "response_text",
    "safe_link",
    "snapshot_bundle",
    "static_mode",
    "stream_html",
    "summary_html",
    "tool_result_html",
    "tools_of",
]

register(Message, static=message_bundle)
register(AgentOutput, static=output_bundle)
register(SessionSnapshot, static=snapshot_bundle)
register(AgentResponse, static=response_bundle)
register(PendingTurn, static=lambda turn: pending_bundle([turn]))
register(PendingTurns, static=pending_bundle)
register(AuditTrail, static=audit_bundle)
register(SessionRules, static=rules_bundle)
