"""What an `Inbox` batch came to, in one status line: answered, answered first by another, refused.

A row another answer went first for runs nothing again (the same answer
replays it, a different one is refused: `nb_agents.inbox.Outcome`); the line
says whose answer it was, read from the audit, never the engine's snapshot ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import AlreadyResumedError
from ..inbox import Outcome, Verb
from ..render._html import MUTED, esc
from ..render.answers import record_words
from .expiring import answers_in

if TYPE_CHECKING:
    from ..listings import InboxItem
    from ..stores.base import AuditRecord

__all__ = ["report_html"]

_DONE = {"approve": "approved", "deny": "denied", "cancel": "cancelled"}


async def report_html(
    sent: Sequence[tuple[InboxItem, Verb]], outcomes: list[Outcome], skipped: list[str], *, you: str | None
) -> str:
    """The status after a batch: `sent` are the rows answered and each one's verb, `skipped`
    the titles left waiting, `you` who answered here (their own earlier answer says "by you")."""
    firsts = {id(o): await _answered_first(o) for o in outcomes if _went_first(o)}
    done: dict[str, int] = {}
    refused, before = [], []
    ok = {id(i) for o in outcomes if o.ok and id(o) not in firsts for i in o.items}
    for item, verb in sent:
        if id(item) in ok:
            done[_DONE[verb]] = done.get(_DONE[verb], 0) + 1
    for o in outcomes:
        if id(o) in firsts:
            said = {(r.name, r.ref): record_words(r, you=you) for r in firsts[id(o)]}
            for item in o.items:
                how = said.get((item.tool, item.interrupt.ref), "answered elsewhere")
                before.append(f"{item.summary.title} ({how})")
        elif o.error is not None:
            refused.append(f"{o.items[0].summary.title}: {o.error.message}")
    text = ", ".join(f"{word} {n}" for word, n in done.items()).capitalize() or "Nothing answered"
    out = f'<span style="color:var(--jp-success-color0,#2e7d32);font-weight:600">{esc(text)}</span>'
    if before:
        out += f'<div style="{MUTED}">Already answered, nothing ran again: {esc("; ".join(before))}</div>'
    if skipped:
        out += f'<div style="{MUTED}">Left waiting (answer in its own form): {esc(", ".join(skipped))}</div>'
    if refused:
        out += f'<div style="color:var(--jp-error-color1,#c62828)">{esc("; ".join(refused))}</div>'
    return out


def _went_first(outcome: Outcome) -> bool:
    """Whether another answer to the turn went before this one (the same answer: replayed)."""
    return outcome.replayed or isinstance(outcome.error, AlreadyResumedError)


async def _answered_first(outcome: Outcome) -> list[AuditRecord]:
    """The audit's answers to the calls `outcome` answered, given before it ([] if unknown)."""
    turn = outcome.turn
    if not turn.session_id:
        return []
    keys = {(i.tool, i.interrupt.ref) for i in outcome.items}
    return await answers_in(turn.agent, turn.session_id, turn.snapshot_id, keys)
