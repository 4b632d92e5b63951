"""`Timeline`: a turn or a whole session as a timeline in the cell.

What ran, in order and to scale: each turn's model calls and tool runs (a bar
each, placed within the turn), the calls that waited for a person, the wait
itself and who answered it, and a sub-agent's own turns under the tool that ran
them. It is a static HTML record (``_repr_mimebundle_`` with ``text/html`` and
``text/plain``), not a widget: it reads the same in a saved notebook, on GitHub
and in nbviewer, in the light and dark themes.

Where the times come from: each turn's row keeps a compact ``timing`` (its
length and its steps, written by the engine: `nb_agents._engine.observe`), and
ends at the row's ``updatedAt``; a wait runs from the end of the paused turn to
the start of the turn its answer resumed, and the audit says who answered and
how. A turn without a store has its timing in-process (the response's), and no
clock times. In static mode (``NB_AGENTS_STATIC=1``, stored notebook outputs)
no times or lengths are shown: bars are evenly spaced, in order.

Example:
    >>> res = chat.send_sync("Transfer $500")          # doctest: +SKIP
    >>> Timeline(res)                                  # this turn (and the wait before it)
    >>> Timeline(chat)                                 # the whole session so far
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from .._sync import run
from ..agent import Agent
from ..chat import Chat
from ..expiry import parse as parse_time
from ..nested import innermost, nested_answer
from ..render.answers import answer_line, answer_verb
from ..render.timeline import Step, Turn, Wait, timeline_html, timeline_text
from ..responses import AgentResponse
from ..stores.base import ANSWER_KINDS, AuditRecord
from ..subagents import SubAgentTool
from ..types import Message, SessionSnapshot

__all__ = ["Step", "Timeline", "Turn", "Wait"]

MAX_DEPTH = 3  # sub-agents of sub-agents of sub-agents; deeper ones are summarised by their tool row


def _steps(timing: dict[str, Any] | None) -> tuple[float | None, list[Step]]:
    """The turn's length and steps from its compact ``timing`` (`_engine.observe`)."""
    if not isinstance(timing, dict):
        return None, []
    found: list[Step] = []
    for raw in timing.get("steps") or []:
        if not isinstance(raw, list) or len(raw) < 4:
            continue
        kind = {"m": "model", "t": "tool"}.get(str(raw[0]), str(raw[0]))
        ref = raw[4] if len(raw) > 4 and isinstance(raw[4], str) else None
        usual = "stop" if kind == "model" else "done"
        outcome = str(raw[5]) if len(raw) > 5 and raw[5] else usual
        found.append(Step(kind, str(raw[1]), float(raw[2] or 0), float(raw[3] or 0), outcome, ref))
    ms = timing.get("ms")
    return (float(ms) if isinstance(ms, int | float) else None), found


def _held(msg: Message | None) -> list[Step]:
    """The calls a paused turn's last message waits on (a sub-agent's, named by its agent)."""
    if msg is None or msg.role != "model":
        return []
    held: list[Step] = []
    for part in msg.interrupts():
        tr = part.tool_request
        assert tr is not None
        data = (part.metadata or {}).get("interrupt")
        sub = data.get("subagent") if isinstance(data, dict) else None
        agent = str(sub.get("agent")) if isinstance(sub, dict) else ""
        held.append(
            Step("held", tr.name, ref=tr.ref, outcome="waits for its sub-agent" if agent else "waits")
        )
    return held


def _said(messages: Sequence[Message], before: int) -> str:
    """What started the turn whose messages begin at `before`: the user's words, or an answer."""
    if before < len(messages) and messages[before].role == "user":
        return messages[before].text or "(a message)"
    return "an answer"


def _answer_words(rec: AuditRecord) -> str:
    answer = rec.answer
    if (
        rec.kind == "restart" and nested_answer(answer) is not None
    ):  # a sub-agent's: what the person said to it
        inner = innermost(_as_part(rec))
        answer = inner.tool_response.output if inner.tool_response else (inner.metadata or {}).get("resumed")
        kind = "respond" if inner.tool_response else "restart"
        verb = answer_verb(kind, answer)
    else:
        verb = answer_verb(rec.kind, answer)
    line = answer_line(verb, by=rec.answered_by)
    return f"{line} · decided by {rec.decision}" if rec.decision and rec.decision != "person" else line


def _as_part(rec: AuditRecord) -> Any:
    from ..types import Part, ToolRequest

    return Part(tool_request=ToolRequest(name=rec.name, ref=rec.ref), metadata={"resumed": rec.answer})


# -- loading -------------------------------------------------------------------------------------
async def _lineage(agent: Agent, snapshot_id: str | None, limit: int) -> list[SessionSnapshot]:
    """The rows from a session's first turn to `snapshot_id`, oldest first (at most `limit`)."""
    rows: list[SessionSnapshot] = []
    seen: set[str] = set()
    while snapshot_id and snapshot_id not in seen and len(rows) < limit:
        seen.add(snapshot_id)
        snap = await agent.get_snapshot(snapshot_id)
        if snap is None:
            break
        rows.append(snap)
        snapshot_id = snap.parent_id
    return rows[::-1]


async def _turns(agent: Agent, rows: Sequence[SessionSnapshot], context: bool, depth: int) -> list[Turn]:
    """The turns of `rows` (one session's, oldest first); with `context`, the first row only says
    what the second continued from (the pause its answer waited on)."""
    if not rows:
        return []
    session_id = rows[-1].session_id
    audit: list[AuditRecord] = list(await agent.audit(session_id)) if session_id else []
    turns: list[Turn] = []
    for i, row in enumerate(rows):
        if i == 0 and (context or row.fork_of is not None):
            continue  # what the next turn goes on from; a fork's first row copies a pause, it never ran
        ms, steps = _steps(row.timing)
        end = parse_time(row.updated_at)
        start = (
            end - timedelta(milliseconds=ms)
            if end is not None and ms is not None
            else parse_time(row.created_at)
        )
        messages = row.state.messages if row.state is not None else []
        prev = rows[i - 1] if i > 0 else None
        before = len(prev.state.messages) if prev is not None and prev.state is not None else 0
        if row.finish_reason == "interrupted" and messages:
            steps += _held(messages[-1])
        turn = Turn(
            str(row.agent or (agent.name if agent is not None else "")),
            start,
            ms,
            str(row.finish_reason or row.status or "unknown"),
            _said(messages, before),
            steps,
            snapshot_id=row.snapshot_id,
            number=None if context else i + (0 if rows[0].fork_of is not None else 1),
        )
        if prev is not None and prev.finish_reason == "interrupted":
            answered = [r for r in audit if r.child_id == row.snapshot_id and r.kind in ANSWER_KINDS]
            paused_end = (
                None if prev.fork_of is not None else parse_time(prev.updated_at)
            )  # a fork waits from its copy
            turn.wait = Wait(paused_end, start, [(r.name, _answer_words(r)) for r in answered])
        turns.append(turn)
    if depth < MAX_DEPTH:
        await _attach_subagents(agent, turns, session_id, depth)
    return turns


async def _attach_subagents(agent: Agent, turns: list[Turn], session_id: str | None, depth: int) -> None:
    """Put each sub-agent call's own turns under the tool rows that ran them (in order)."""
    tools = agent.tools if agent is not None else {}
    subs = {name: t.agent for name, t in tools.items() if isinstance(t, SubAgentTool)}
    if not subs or not session_id:
        return
    for name, child in subs.items():
        store = child.store
        if store is None:
            continue
        runs: dict[str | None, list[tuple[Step, datetime | None]]] = {}
        for turn in turns:
            for step in turn.steps:
                if step.kind == "tool" and step.name == name:
                    step.agent = child.name
                    began = turn.start + timedelta(milliseconds=step.at) if turn.start is not None else None
                    runs.setdefault(step.ref, []).append((step, began))
        if not runs:
            continue
        prefix = f"{session_id}~{child.name}-"
        for sid in await store.session_ids():
            if not sid.startswith(prefix) or "~" in sid[len(prefix) :]:
                continue
            leaf = await child.get_snapshot(session_id=sid)
            rows = await _lineage(child, leaf.snapshot_id if leaf is not None else None, 200)
            first = rows[0].state.messages[0] if rows and rows[0].state and rows[0].state.messages else None
            link = (first.metadata or {}).get("subagent") if first is not None else None
            ref = link.get("ref") if isinstance(link, dict) else None
            for sub in await _turns(child, rows, False, depth + 1):
                ran = _containing(runs.get(ref, []), sub)
                if ran is not None:
                    ran.nested.append(sub)


def _containing(runs: Sequence[tuple[Step, datetime | None]], sub: Turn) -> Step | None:
    """The tool run (of those of one call) that ran the sub-agent's turn `sub`: the nearest in time."""
    if sub.start is None:
        return None
    middle = sub.start + timedelta(milliseconds=(sub.ms or 0) / 2)
    best: tuple[float, Step] | None = None
    for step, began in runs:
        if began is None:
            continue
        ended = began + timedelta(milliseconds=step.ms)
        gap = (
            0.0
            if began <= middle <= ended
            else min(abs((middle - t).total_seconds()) for t in (began, ended))
        )
        if best is None or gap < best[0]:
            best = (gap, step)
    return best[1] if best is not None and best[0] < 1.0 else None


async def load(source: AgentResponse | Chat, *, limit: int = 200) -> list[Turn]:
    """The turns `Timeline` shows for a response (its turn) or a chat (its session)."""
    chat = source if isinstance(source, Chat) else source.chat
    agent = chat.agent if chat is not None else None
    local = agent if isinstance(agent, Agent) and agent.store is not None else None
    if isinstance(source, AgentResponse):
        if local is not None and source.snapshot_id:
            snap = await local.get_snapshot(source.snapshot_id)
            if snap is not None:
                parent = await local.get_snapshot(snap.parent_id) if snap.parent_id else None
                rows = [parent, snap] if parent is not None else [snap]
                return await _turns(local, rows, parent is not None, 0)
        return [_in_process(source, agent.name if agent is not None else "")]
    if local is not None and source.snapshot_id:
        return await _turns(local, await _lineage(local, source.snapshot_id, limit), False, 0)
    name = agent.name if agent is not None else ""
    return [_in_process(source.last, name)] if source.last is not None else []


def _in_process(res: AgentResponse, agent: str) -> Turn:
    """A turn known only in this process (no store): its timing, no clock times."""
    ms, steps = _steps(res.raw._timing)
    if res.finish_reason == "interrupted":
        steps += _held(res.message)
    user = [i for i, m in enumerate(res.messages) if m.role == "user"]
    said = _said(res.messages, user[-1]) if user else "an answer"
    return Turn(agent, None, ms, res.finish_reason, said, steps)


class Timeline:
    """A turn or a session as a timeline in the cell (see the module docstring).

    Args:
        source: A response (its turn, and the wait before it) or a chat (its session).
        limit: The most turns of a session to show (the latest ones).

    Attributes:
        turns: The `Turn` values shown, oldest first.
    """

    def __init__(
        self, source: AgentResponse | Chat, *, limit: int = 200, turns: list[Turn] | None = None
    ) -> None:
        if not isinstance(source, AgentResponse | Chat):
            raise TypeError(f"Timeline takes a response or a chat, got {type(source).__name__}")
        self.source = source
        self.turns: list[Turn] = turns if turns is not None else run(load(source, limit=limit))

    @classmethod
    async def aload(cls, source: AgentResponse | Chat, *, limit: int = 200) -> Timeline:
        """The same, read with ``await`` (the constructor reads the store on nb_agents' own loop)."""
        return cls(source, limit=limit, turns=await load(source, limit=limit))

    @property
    def title(self) -> str:
        if isinstance(self.source, Chat):
            return "Session timeline"
        return "Turn timeline"

    def __repr__(self) -> str:
        return timeline_text(self.turns, title=self.title)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/plain": repr(self), "text/html": timeline_html(self.turns, title=self.title)}
