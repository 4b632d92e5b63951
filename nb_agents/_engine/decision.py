"""The one place that decides whether a tool call that needs a person may run.

A call *needs a person* when the agent gates it (`ToolApproval` and the call
is not on its allowlist) or when its tool says so (``needs_approval=True``:
an MCP tool of an untrusted server, a destructive one). Such a call runs only
on a `Decision` with a provenance, and `decide` is the only code that makes
one. It takes:

* the call as it will run: its name, ref and the input that will actually
  run (after an edit);
* the answer, if this run is a restart: the ``resumed`` value of the person's
  restart part (or of a deadline's default, marked ``expired``), and the
  principal that gave it;
* the agent's policy (`Gate`, from its `ToolApproval`): static rules,
  allowlist, deadline;
* the session's rules as they are *now* (read from the store when needed,
  never taken from whichever snapshot the turn continues from).

Nothing the model writes is an input here: the engine strips control
metadata from the model's tool calls as they arrive (`interrupts.CONTROL_KEYS`),
so a ``resumed`` value reaches `decide` only from an answer.

The order: a deny rule that matches the input that will run refuses the call,
whoever approved it; then an approval (``resumed.toolApproved``) runs it;
unanswered, the first matching static rule answers it, then the allowlist,
then a live session rule (of its tool, or of its tool and exactly its
arguments: `rules.match_session`); otherwise it is held for a person. Each decision
names its kind (``person``, ``rule``, ``expiry``, ``policy``), which the audit
records with the principal and the exact input that ran.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..rules import ApprovalRule, Gate, RuleScope, always_asked, match_session, rule_scope
from ..tools import Tool

__all__ = ["Call", "Decision", "DecisionKind", "Gate", "approved", "decide", "session_rule"]

DecisionKind = Literal["person", "rule", "expiry", "policy"]
Verdict = Literal["run", "deny", "hold"]
LiveRules = Callable[[], Awaitable[Sequence[dict[str, Any]]]]


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether a call runs, and who decided.

    Attributes:
        verdict: ``run``, ``deny`` (answer the model with `output`, run nothing)
            or ``hold`` (pause the turn for a person).
        kind: Who decided (``person``, ``rule``, ``expiry``, ``policy``); None when
            the call needs nobody's decision (an ungated tool) or is held.
        principal: The person who answered, when one did and is known.
        rule: The rule that answered: ``{"rule": id, "action": "allow" | "deny"}``.
        output: What a denied call answers the model.
        always: An approval that also asks for a per-session rule.
        scope: That rule's scope: ``"tool"`` or ``"arguments"`` (this exact input).
    """

    verdict: Verdict
    kind: DecisionKind | None = None
    principal: str | None = None
    rule: dict[str, Any] | None = None
    output: Any = None
    always: bool = False
    scope: RuleScope = "tool"


FREE = Decision("run")
HOLD = Decision("hold")


@dataclass(frozen=True, slots=True)
class Call:
    """A call about to run.

    Attributes:
        name: The tool's name.
        ref: The call's ref.
        input: The input that will run (an edited restart's new input).
        answer: The ``resumed`` value of the restart that runs it (None: a first run).
        expired: The restart's ``metadata.expired`` (a deadline's default), or None.
        principal: Who gave the answer, when known.
    """

    name: str
    ref: str | None
    input: Any
    answer: Any = None
    expired: Any = None
    principal: str | None = None


def approved(answer: Any) -> bool:
    """Whether a restart's ``resumed`` approves the call (``toolApproved``; a bare ``true`` does not)."""
    if not isinstance(answer, dict):
        return False
    return answer.get("toolApproved") is True or answer.get("tool_approved") is True


def _by_rule(rule: ApprovalRule, name: str) -> Decision:
    answer = {"rule": rule.id, "action": rule.action}
    if rule.action == "deny":
        return Decision("deny", "rule", rule=answer, output=rule.denial(name))
    return Decision("run", "rule", rule=answer)


async def decide(call: Call, tool: Tool | None, gate: Gate | None, live_rules: LiveRules) -> Decision:
    """Whether `call` may run now (see the module docstring for the order)."""
    needs = tool.approval_needed(call.answer) if tool is not None else None
    if needs is False or (needs is None and gate is None):
        return FREE  # the call needs nobody: an ungated tool, or one that asks no approval
    rules = gate.rules if gate is not None else ()
    if approved(call.answer):
        for rule in rules:
            if rule.action == "deny" and rule.matches(call.name, call.input):
                return _by_rule(rule, call.name)  # judged on the input that will run
        kind: DecisionKind = "expiry" if call.expired is not None else "person"
        always = always_asked(call.answer)
        return Decision(
            "run",
            kind,
            call.principal if kind == "person" else None,
            always=always,
            scope=rule_scope(call.answer) if always else "tool",
        )
    for rule in rules:
        if rule.matches(call.name, call.input):
            return _by_rule(rule, call.name)
    if gate is not None and call.name in gate.allowed:
        return Decision("run", "policy") if needs else FREE
    found = match_session(await live_rules(), call.name, call.input)
    if found is not None:
        return Decision("run", "rule", rule={"rule": found["id"], "action": "allow"})
    return HOLD


def session_rule(
    name: str, ref: str | None, key: str, scope: RuleScope = "tool", input: Any = None
) -> dict[str, Any]:
    """The per-session rule an ``approve(always=True)`` of a call of `name` makes (its id from `key`).

    A rule of scope ``"arguments"`` keeps the exact `input` it allows.
    """
    rule: dict[str, Any] = {"id": f"always-{key[:12]}", "tool": name, "action": "allow", "ref": ref}
    if scope == "arguments":
        rule.update(scope="arguments", input=input)
    return rule
