"""A sub-agent's pause on its way up, and the answer to it on its way down.

When an agent used as a tool (`Agent.as_tool`, `nb_agents.subagents`) pauses,
its tool pauses the parent's call too, with pause data that carries the
child's pause::

    {"message": "...", "subagent": {"agent": "researcher", "sessionId": ..., "snapshotId": ...,
     "parentSessionId": ..., "interrupts": [<the child's interrupted tool-request parts>]}}

(``state``, the child's state blob, in place of ``snapshotId`` for a sub-agent
without a store.) A child part may be such a pause itself (two levels and
more). `interrupts_of` flattens a paused message into one interrupt per call
that waits at the bottom: a plain `AgentInterrupt`, or a `NestedInterrupt`
whose ``path`` names the agents on the way (``["manager", "worker"]``). Its
builders answer the bottom call and lift the answer into a restart of each
call on the way up (`NestedInterrupt.wrap`), whose ``resumed`` value is a
*nested answer*::

    {"subagent": {"respond": [...], "restart": [...], "partial": true, "answeredBy": "ana"}}

The answers inside are bound to the child's pauses by their own
``interruptDigest``; the lifted restart carries none, so that an answer to one
of a child's questions still fits once another answer moved the child on.
`merge_answers` (the engine runs it on every input) merges the nested answers
to one call into one, so ``resume(restart=[i.approve() for i in res.interrupts])``
answers two questions of one sub-agent at once, and marks them ``partial``
when the input is. `check_answer` is what the sub-agent tool checks an answer
with before anything is claimed.

Nothing here is a decision: a nested answer reaches the child as an answer to
the child's own pause, and the child's decision step judges it there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from .errors import InvalidArgumentError
from .interrupts import AgentInterrupt, ApprovalHold, held_for_approval, interrupt_digest, restart_part
from .types import AgentInput, Part, ToolResume

__all__ = [
    "SUBAGENT",
    "NestedHold",
    "NestedInterrupt",
    "check_answer",
    "child_parts",
    "innermost",
    "interrupts_of",
    "merge_answers",
    "nested_answer",
    "sub_pause",
    "tool_for",
]

SUBAGENT = "subagent"
"""The key of a sub-agent's pause in the pause data, and of a nested answer in ``resumed``."""

_ANSWER_KEYS = frozenset({"respond", "restart", "partial", "answeredBy"})


def sub_pause(part: Part) -> dict[str, Any] | None:
    """The sub-agent pause a paused call carries (``metadata.interrupt.subagent``), or None."""
    data = (part.metadata or {}).get("interrupt")
    sub = data.get(SUBAGENT) if isinstance(data, dict) else None
    if (
        isinstance(sub, dict)
        and isinstance(sub.get("agent"), str)
        and isinstance(sub.get("interrupts"), list)
    ):
        return sub
    return None


def child_parts(sub: Mapping[str, Any]) -> list[Part]:
    """The child's interrupted calls a sub-agent pause lists (what does not parse is left out)."""
    parts: list[Part] = []
    for raw in sub.get("interrupts") or []:
        try:
            part = Part.model_validate(raw)
        except ValidationError:
            continue
        if part.tool_request is not None and part.is_interrupt:
            parts.append(part)
    return parts


def nested_answer(value: Any) -> dict[str, Any] | None:
    """The nested answer a restart's ``resumed`` value is (``{"subagent": {...}}``), or None."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(SUBAGENT), dict):
        return value[SUBAGENT]  # type: ignore[no-any-return]
    return None


# -- the interrupts of a paused message --------------------------------------------------------
class NestedInterrupt(AgentInterrupt):
    """A call that waits inside a sub-agent, seen from the top.

    ``name``, ``ref``, ``input``, ``data``, ``part`` and ``expires_at`` are the
    waiting call's own (in the sub-agent); the builders return answers for the
    top-level turn: a restart of the top call (`top`) carrying the answer down.

    Attributes:
        path: The agents on the way down, outermost first (``["researcher"]``).
        top: The top-level paused call (of the agent you talk to) the answer restarts.
        chain: The paused calls on the way, outermost first (``chain[0] is top``).
    """

    def __init__(self, leaf: Part, chain: Sequence[Part], path: Sequence[str]) -> None:
        super().__init__(leaf)
        self.chain = list(chain)
        self.top = self.chain[0]
        self.path = list(path)

    def wrap(self, answer: Part) -> Part:
        """Lift an answer to the waiting call (a respond or restart part) to the top-level turn."""
        for parent in reversed(self.chain):
            kind = "respond" if answer.tool_response is not None else "restart"
            lifted = restart_part(parent, resumed={SUBAGENT: {kind: [answer.to_wire()]}})
            meta = {k: v for k, v in (lifted.metadata or {}).items() if k != "interruptDigest"}
            answer = lifted.model_copy(update={"metadata": meta})
        return answer

    def respond(self, output: Any) -> Part:
        """Supply the waiting call's output (the tool in the sub-agent does not run). Goes in ``restart``."""
        return self.wrap(super().respond(output))

    def restart(self, resumed: Any = None, replace_input: Any = None) -> Part:
        """Run the waiting call again in the sub-agent (see `AgentInterrupt.restart`). Goes in ``restart``."""
        return self.wrap(super().restart(resumed, replace_input))

    def approve(self, *, always: bool = False, scope: str | None = None) -> Part:
        """Approve the waiting call (``always``: a rule in the sub-agent's session). Goes in ``restart``."""
        return self.wrap(super().approve(always=always, scope=scope))

    def cancel(self, reason: str | None = None) -> Part:
        """Cancel the waiting call: the sub-agent's model is told it was cancelled. Goes in ``restart``."""
        return self.wrap(super().cancel(reason))

    def deny(self, output: Any = None) -> Part:
        """Refuse the waiting call: the sub-agent's model reads `output` instead. Goes in ``restart``."""
        return self.wrap(ApprovalHold(self.part).deny(output))

    def __repr__(self) -> str:
        return (
            f"NestedInterrupt(path={self.path!r}, name={self.name!r}, ref={self.ref!r}, input={self.input!r})"
        )


class NestedHold(NestedInterrupt, ApprovalHold):
    """A call held by the sub-agent's `ToolApproval`: approve or deny it from the top."""

    respond = NestedInterrupt.deny


def _flatten(part: Part, chain: list[Part], path: list[str], depth: int) -> list[AgentInterrupt]:
    sub = sub_pause(part) if depth < 8 else None
    if sub is None:
        if not chain:
            return [AgentInterrupt(part)]
        kind = NestedHold if held_for_approval(part) else NestedInterrupt
        return [kind(part, chain, path)]
    found: list[AgentInterrupt] = []
    for child in child_parts(sub):
        found += _flatten(child, [*chain, part], [*path, str(sub["agent"])], depth + 1)
    return found or ([AgentInterrupt(part)] if not chain else [])


def interrupts_of(parts: Sequence[Part]) -> list[AgentInterrupt]:
    """The interrupts of paused calls, a sub-agent's pause flattened into its waiting calls."""
    found: list[AgentInterrupt] = []
    for part in parts:
        found += _flatten(part, [], [], 0)
    return found


def tool_for(tools: Mapping[str, Any], interrupt: AgentInterrupt) -> Any:
    """The tool an interrupt waits on, looked up through the sub-agent tools on its path; None if unknown."""
    path = interrupt.chain if isinstance(interrupt, NestedInterrupt) else ()
    found: Mapping[str, Any] = tools
    for parent in path:
        assert parent.tool_request is not None
        step = found.get(parent.tool_request.name)
        nested = step.subagent_tools if step is not None else None
        if nested is None:
            return None
        found = nested
    return found.get(interrupt.name)


def innermost(answer: Part) -> Part:
    """The answer given to the call that asked, inside a sub-agent's lifted answer (`answer` if none)."""
    for _ in range(8):
        inner = nested_answer((answer.metadata or {}).get("resumed")) if answer.tool_request else None
        parts = [*(inner.get("respond") or []), *(inner.get("restart") or [])] if inner is not None else []
        if len(parts) != 1:
            break
        try:
            answer = Part.model_validate(parts[0])
        except ValidationError:
            break
    return answer


# -- answers on the way down -------------------------------------------------------------------
def _parts(raw: Any, where: str) -> list[Part]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidArgumentError(f"{where} must be a list of parts, got {type(raw).__name__}")
    try:
        return [Part.model_validate(p) for p in raw]
    except ValidationError as exc:
        raise InvalidArgumentError(f"{where} holds a part that is not one: {exc}") from exc


def _merged(restart: Sequence[Part], partial: bool, by: str | None) -> list[Part]:
    """`restart` with the nested answers to one call merged into one (recursively), marked."""
    out: list[Part] = []
    groups: dict[tuple[str, str | None], int] = {}
    bodies: dict[int, dict[str, Any]] = {}
    for part in restart:
        answer = nested_answer((part.metadata or {}).get("resumed")) if part.tool_request else None
        if answer is None or part.tool_request is None:
            out.append(part)
            continue
        key = (part.tool_request.name, part.tool_request.ref)
        if key not in groups:
            groups[key] = len(out)
            bodies[len(out)] = {"respond": [], "restart": [], "partial": False, "answeredBy": None}
            out.append(part)
        body = bodies[groups[key]]
        body["respond"] += list(answer.get("respond") or [])
        body["restart"] += list(answer.get("restart") or [])
        body["partial"] = body["partial"] or answer.get("partial") is True
        body["answeredBy"] = body["answeredBy"] or answer.get("answeredBy")
    for at, body in bodies.items():
        inner = _merged(_parts(body["restart"], "a nested answer's restart"), partial, by)
        value: dict[str, Any] = {}
        if body["respond"]:
            value["respond"] = body["respond"]
        if inner:
            value["restart"] = [p.to_wire() for p in inner]
        if partial or body["partial"]:
            value["partial"] = True
        who = body["answeredBy"] or by
        if isinstance(who, str):
            value["answeredBy"] = who
        part = out[at]
        out[at] = part.model_copy(
            update={"metadata": {**(part.metadata or {}), "resumed": {SUBAGENT: value}}}
        )
    return out


def merge_answers(inp: AgentInput) -> AgentInput:
    """`inp` with its nested answers merged per call and marked (see the module docstring).

    An input without nested answers is returned as it is, at the cost of one scan.
    """
    resume = inp.resume
    if resume is None:
        return inp
    for p in resume.restart:  # a loop, not any(...): every answer passes here
        resumed = p.metadata.get("resumed") if p.metadata else None
        if isinstance(resumed, dict) and SUBAGENT in resumed and nested_answer(resumed):
            break
    else:
        return inp
    meta = resume.metadata if isinstance(resume.metadata, dict) else {}
    by = meta.get("answeredBy")
    restart = _merged(resume.restart, bool(inp.partial), by if isinstance(by, str) else None)
    merged = ToolResume(respond=list(resume.respond), restart=restart, metadata=resume.metadata)
    return inp.model_copy(update={"resume": merged})


def _ref(ref: str | None) -> str:
    return f" (ref: {ref})" if ref else ""


def check_answer(
    answer: Mapping[str, Any],
    sub: Mapping[str, Any],
    tools: Mapping[str, Any] | None,
    *,
    where: str = "",
) -> None:
    """Check a nested answer against the sub-agent pause it answers, before anything is claimed.

    Each answer must name a call that waits in the pause, be built for that very
    pause (its ``interruptDigest``), fit the child tool's schemas when they are
    known, and, unless the answer is ``partial``, every waiting call must be answered.
    A sub-agent's own pause inside is checked the same way, one level down.
    """
    agent = str(sub.get("agent"))
    here = f"{where} > {agent}" if where else agent
    unknown = set(answer) - _ANSWER_KEYS
    if unknown:
        raise InvalidArgumentError(
            f"the answer to sub-agent '{here}' has unknown keys {sorted(unknown)}; "
            "build it with the interrupt's own builders (res.interrupts)"
        )
    waiting = {(p.tool_request.name, p.tool_request.ref): p for p in child_parts(sub) if p.tool_request}
    answered: set[tuple[str, str | None]] = set()
    for kind in ("respond", "restart"):
        for part in _parts(answer.get(kind), f"the answer to sub-agent '{here}'"):
            call = part.tool_response if kind == "respond" else part.tool_request
            if call is None:
                raise InvalidArgumentError(
                    f"the {kind} answers to sub-agent '{here}' must be "
                    f"{'toolResponse' if kind == 'respond' else 'toolRequest'} parts"
                )
            key = (call.name, call.ref)
            original = waiting.get(key)
            if original is None:
                raise InvalidArgumentError(
                    f"sub-agent '{here}' is not waiting on tool '{call.name}'{_ref(call.ref)}: the answer "
                    "was built for another pause; build it from the latest response's interrupts"
                )
            if key in answered:
                raise InvalidArgumentError(
                    f"the answer to sub-agent '{here}' answers tool '{call.name}'{_ref(call.ref)} twice"
                )
            answered.add(key)
            digest = (part.metadata or {}).get("interruptDigest")
            if digest is not None and digest != interrupt_digest(original):
                raise InvalidArgumentError(
                    f"the answer to tool '{call.name}'{_ref(call.ref)} of sub-agent '{here}' was built for "
                    "another pause of that call; build it from the latest response's interrupts"
                )
            _check_leaf(kind, part, original, tools, here)
    if answer.get("partial") is True:
        if not answered:
            raise InvalidArgumentError(f"the answer to sub-agent '{here}' answers none of its questions")
        return
    for (name, ref), _part in waiting.items():
        if (name, ref) not in answered:
            raise InvalidArgumentError(
                f"Unresolved tool request '{name}#{ref or ''}' of sub-agent '{here}' was not handled by the "
                "'resume' argument. You must supply replies or restarts for all interrupted tool requests.",
                details={"hint": "resume with partial=True to answer some now and the rest later"},
            )


def _check_leaf(kind: str, part: Part, original: Part, tools: Mapping[str, Any] | None, here: str) -> None:
    """One answer to one waiting call of a sub-agent: its schema, or the pause one level down."""
    tool = tools.get(original.tool_request.name) if tools is not None and original.tool_request else None
    deeper = sub_pause(original)
    if kind == "restart":
        resumed = (part.metadata or {}).get("resumed")
        inner = nested_answer(resumed)
        if deeper is not None and inner is not None:
            check_answer(inner, deeper, tool.subagent_tools if tool is not None else None, where=here)
            return
        if tool is not None:
            check: Callable[[Any, Any], None] = tool.check_resume
            try:
                pause = (original.metadata or {}).get("interrupt")
                check(resumed, pause if isinstance(pause, dict) else None)
            except ValidationError as exc:
                raise InvalidArgumentError(
                    f"the answer to tool '{tool.name}' of sub-agent '{here}' does not fit its resume "
                    f"schema: {exc.errors()[0]['msg'] if exc.errors() else exc}"
                ) from exc
        return
    if tool is not None and not held_for_approval(original) and deeper is None:
        assert part.tool_response is not None
        try:
            tool.check_output(part.tool_response.output)
        except ValidationError as exc:
            raise InvalidArgumentError(
                f"the answer to tool '{tool.name}' of sub-agent '{here}' does not fit its output "
                f"schema: {exc.errors()[0]['msg'] if exc.errors() else exc}"
            ) from exc
