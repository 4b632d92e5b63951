"""Who may see and answer a session: its agent, its owner, and a team's policy.

A session belongs to the agent that created it and to the principal that
created it (``context["auth"]["uid"]`` of its first turn; none without one).
Each snapshot records both (``agent``, ``owner``). A caller with a request
context sees a snapshot only when

* it was written by this agent (or records none: written before agents were
  recorded), and
* it has no owner, or the caller is its owner, or the agent's ``authorize``
  policy grants the caller the action (``"read"``, ``"message"``, ``"resume"``,
  ``"abort"``): ``authorize(principal, snapshot, action) -> bool``.

An *approver* (a caller whose context says ``{"auth": {"uid": "lee", "roles":
["approver"]}}``) may also ``"read"`` and ``"resume"`` (answer the waiting
interrupts of) every session of the agent, and never ``"message"`` (send into)
or ``"abort"`` one that is not theirs; the audit then names both the approver
(``answered_by``) and the session's owner (``requested_by``).

Anything else is answered exactly as an unknown id is (``NOT_FOUND``), so a
caller learns nothing about sessions that are not theirs. A caller without a
context (``context=None``: in-process code, the notebook's own user) is trusted
and sees everything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from ..types import SessionSnapshot

__all__ = ["APPROVER_ROLE", "Action", "Authorize", "is_approver", "principal_of", "visible"]

Action = Literal["read", "message", "resume", "abort"]
Authorize = Callable[[str | None, SessionSnapshot, str], bool]
"""A team's policy: may `principal` do `action` on `snapshot`, which another owns?"""

APPROVER_ROLE = "approver"
"""The role (``context["auth"]["roles"]``) that may read and answer others' sessions of an agent."""
_APPROVER_ACTIONS = ("read", "resume")


def principal_of(context: Mapping[str, Any] | None) -> str | None:
    """The authenticated principal of a request context: ``context["auth"]["uid"]``."""
    auth = context.get("auth") if context else None
    uid = auth.get("uid") if isinstance(auth, Mapping) else None
    return uid if isinstance(uid, str) and uid else None


def is_approver(context: Mapping[str, Any] | None) -> bool:
    """Whether the request context names an authenticated approver (``roles`` holds ``"approver"``)."""
    auth = context.get("auth") if context else None
    roles = auth.get("roles") if isinstance(auth, Mapping) else None
    if principal_of(context) is None or not isinstance(roles, list | tuple):
        return False
    return APPROVER_ROLE in roles


def visible(
    snap: SessionSnapshot,
    *,
    agent: str,
    context: Mapping[str, Any] | None,
    action: Action,
    authorize: Authorize | None,
) -> bool:
    """Whether the caller with `context` may `action` the session of `snap` (see the module doc)."""
    if snap.agent is not None and snap.agent != agent:
        return False  # another agent's session, even on a shared store
    if context is None or snap.owner is None:
        return True
    principal = principal_of(context)
    if principal == snap.owner:
        return True
    if action in _APPROVER_ACTIONS and is_approver(context):
        return True
    return authorize is not None and bool(authorize(principal, snap, action))
