"""Approval rules: what answers a call held by `ToolApproval` without asking a person.

Two kinds, one matching rule:

* `ApprovalRule`: a static rule given to ``ToolApproval(rules=[...])``, by
  tool name and optionally by a predicate on the call's input; it allows the
  call (it runs without a pause) or denies it (it does not run; the model
  sees a denial, as when a person denies).
* `SessionRule`: a rule made from an answer (``approve(always=True)``): this
  tool, in this session, runs without asking from then on. It is data kept
  with the session's snapshots (``SessionSnapshot.rules``), so it survives a
  kernel or server restart; `Agent.rules` lists and `Agent.revoke_rule`
  revokes it. Its *scope* says which calls it answers: ``"tool"`` (every
  call of the tool, the default) or ``"arguments"`` (only calls with exactly
  the arguments that were approved: ``approve(always=True, scope="arguments")``).

Which rule answered which call is recorded in the audit (kind ``"rule"``),
and so are a session rule's creation and revocation (``"rule-created"``,
``"rule-revoked"``); the tool response in the history names it
(``metadata.approvedBy`` or ``metadata.deniedBy``: ``{"rule": id}``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from ._display import bundle
from ._json import canonical

if TYPE_CHECKING:
    from .expiry import Expiry

__all__ = [
    "ApprovalRule",
    "Gate",
    "RuleAction",
    "SessionRule",
    "RuleScope",
    "SessionRules",
    "always_asked",
    "match_session",
    "rule_scope",
]

log = logging.getLogger("nb_agents.rules")

RuleAction = Literal["allow", "deny"]
_ACTIONS = ("allow", "deny")
RuleScope = Literal["tool", "arguments"]
"""Which calls a per-session rule answers: every call of its tool, or those with its exact arguments."""
SCOPES: tuple[RuleScope, ...] = ("tool", "arguments")


@dataclass(frozen=True)
class ApprovalRule:
    """A static rule of `ToolApproval`: allow or deny calls of a tool without asking.

    Args:
        tool: The tool's name (``"*"``: every tool).
        when: Optional ``(input) -> bool`` on the call's input (the JSON object
            the model passed); the rule matches only when it returns True. A
            predicate that raises does not match (the call goes on to the next
            rule, and is held for a person if none answers it).
        action: ``"allow"`` (run without a pause) or ``"deny"`` (do not run;
            the model is told, as when a person denies).
        message: What the model sees for a denied call (default: a sentence
            naming the tool and the rule).
        id: The rule's name in the audit and the history (default
            ``"<action>:<tool>"``, numbered when two rules would share it).

    Example:
        >>> ApprovalRule("readTable").action
        'allow'
        >>> ApprovalRule("dropTable", action="deny", message="Never drop tables.").id
        'deny:dropTable'
    """

    tool: str
    when: Callable[[Any], bool] | None = None
    action: RuleAction = "allow"
    message: str | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str) or not self.tool:
            raise TypeError(f"ApprovalRule tool must be a tool name (a non-empty str), got {self.tool!r}")
        if self.action not in _ACTIONS:
            raise ValueError(f"ApprovalRule action must be 'allow' or 'deny', got {self.action!r}")
        if self.when is not None and not callable(self.when):
            raise TypeError(
                "ApprovalRule when must be a callable (input) -> bool or None, "
                f"got {type(self.when).__name__}"
            )
        if self.message is not None and not isinstance(self.message, str):
            raise TypeError(f"ApprovalRule message must be a str or None, got {type(self.message).__name__}")
        if self.message is not None and self.action == "allow":
            raise ValueError("ApprovalRule message is what a denied call answers; an 'allow' rule takes none")
        if self.id is not None and (not isinstance(self.id, str) or not self.id):
            raise TypeError(f"ApprovalRule id must be a non-empty str or None, got {self.id!r}")
        if self.id is None:
            object.__setattr__(self, "id", f"{self.action}:{self.tool}")

    def matches(self, name: str, input: Any) -> bool:
        """Whether this rule answers a call of tool `name` with `input`."""
        if self.tool != "*" and self.tool != name:
            return False
        if self.when is None:
            return True
        try:
            return self.when(input) is True
        except Exception:  # noqa: BLE001 - a broken predicate answers nothing: a person is asked
            log.warning("approval rule %r: its predicate raised on %s; it does not match", self.id, name)
            return False

    def denial(self, name: str) -> dict[str, Any]:
        """The output a denied call answers the model with (a person's deny has this shape)."""
        return {"error": self.message or f"The call to '{name}' was denied by rule '{self.id}'."}


def numbered(rules: Sequence[ApprovalRule]) -> tuple[ApprovalRule, ...]:
    """`rules` checked, with default ids made unique (``allow:x``, ``allow:x#2``); a given id must be."""
    out: list[ApprovalRule] = []
    seen: set[str] = set()
    for rule in rules:
        if not isinstance(rule, ApprovalRule):
            raise TypeError(f"ToolApproval rules must be ApprovalRule values, got {type(rule).__name__}")
        rid = rule.id
        assert rid is not None
        if rid in seen:
            if rid != f"{rule.action}:{rule.tool}":
                raise ValueError(f"two approval rules have the id {rid!r}")
            n = 2
            while f"{rid}#{n}" in seen:
                n += 1
            rule = ApprovalRule(rule.tool, rule.when, rule.action, rule.message, f"{rid}#{n}")
        seen.add(rule.id or "")
        out.append(rule)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Gate:
    """An agent's approval policy as the engine's decision step reads it (`ToolApproval.gate`).

    Attributes:
        allowed: Tool names that run without asking.
        rules: Static rules, checked in order.
        expires_in: How long a hold waits for a person, or None.
        on_expiry: What answers a hold nobody answered in time, or None (a denial).
    """

    allowed: frozenset[str] = frozenset()
    rules: tuple[ApprovalRule, ...] = ()
    expires_in: timedelta | None = None
    on_expiry: Expiry | None = None


@dataclass(frozen=True)
class SessionRule:
    """A per-session rule made from an ``approve(always=True)`` answer.

    Attributes:
        id: The rule's id (what `Agent.revoke_rule` takes).
        tool: The tool whose calls it allows in this session.
        action: ``"allow"``.
        created_at: When the answer that made it was accepted (ISO 8601 UTC).
        created_by: Who answered, when known.
        snapshot_id: The paused snapshot whose answer made it.
        ref: The call that was answered.
        scope: ``"tool"`` (every call of the tool) or ``"arguments"`` (only calls
            whose input is exactly `input`).
        input: The approved arguments of an ``"arguments"`` rule, else None.
    """

    id: str
    tool: str
    action: str = "allow"
    created_at: str | None = None
    created_by: str | None = None
    snapshot_id: str | None = None
    ref: str | None = None
    scope: str = "tool"
    input: Any = None

    @property
    def scope_words(self) -> str:
        """The scope as the rule list shows it: "every call", or "only these arguments: {...}"."""
        if self.scope != "arguments":
            return "every call"
        return "only these arguments: " + canonical(self.input)

    def to_dict(self) -> dict[str, Any]:
        """The rule as it is stored (camelCase JSON keys, None left out)."""
        wire = {
            "id": self.id,
            "tool": self.tool,
            "action": self.action,
            "createdAt": self.created_at,
            "createdBy": self.created_by,
            "snapshotId": self.snapshot_id,
            "ref": self.ref,
        }
        out = {k: v for k, v in wire.items() if v is not None}
        if self.scope != "tool":  # a rule of tool scope is stored as it always was
            out["scope"] = self.scope
            out["input"] = self.input
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionRule:
        return cls(
            id=str(data["id"]),
            tool=str(data["tool"]),
            action=str(data.get("action", "allow")),
            created_at=data.get("createdAt"),
            created_by=data.get("createdBy"),
            snapshot_id=data.get("snapshotId"),
            ref=data.get("ref"),
            scope=str(data.get("scope", "tool")),
            input=data.get("input"),
        )


class SessionRules(list[SessionRule]):
    """What `Agent.rules` returns: a list that renders as a table."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle(self)


def match_session(rules: Sequence[dict[str, Any]] | None, name: str, input: Any) -> dict[str, Any] | None:
    """The stored session rule (a dict) that allows a call of tool `name` with `input`, or None.

    A rule of scope ``"arguments"`` matches only the exact input it was made for
    (compared as canonical JSON); a rule of an unknown scope matches nothing.
    """
    for rule in rules or ():
        if rule.get("tool") != name or rule.get("action", "allow") != "allow":
            continue
        scope = rule.get("scope", "tool")
        if scope == "tool" or (scope == "arguments" and canonical(rule.get("input")) == canonical(input)):
            return rule
    return None


def always_asked(resumed: Any) -> bool:
    """Whether a restart's ``resumed`` value asks for a per-session rule (``approve(always=True)``)."""
    return isinstance(resumed, dict) and resumed.get("always") is True


def rule_scope(resumed: Any) -> RuleScope:
    """The scope a ``resumed`` value asks its per-session rule to have (``"tool"`` unless it says).

    Raises:
        ValueError: The scope is neither ``"tool"`` nor ``"arguments"``.
    """
    scope = resumed.get("scope", "tool") if isinstance(resumed, dict) else "tool"
    if scope not in SCOPES:
        raise ValueError(f"an 'always' rule's scope is 'tool' or 'arguments', got {scope!r}")
    return "arguments" if scope == "arguments" else "tool"
