"""Resolving an `AgentInit` into the session a turn starts from.

State ownership is checked here (state to a store-backed agent, ids to a
store-less one, a snapshot of another session) and the resumable-snapshot rule
of DESIGN.md applied: ``completed``, ``failed`` and ``aborted`` snapshots
continue; ``pending``, ``aborting`` and ``expired`` ones do not, and a session
id walks back over them to the nearest snapshot that can.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import FailedPreconditionError, InvalidArgumentError, NbAgentsError, NotFoundError
from ..session import Session
from ..types import AgentInit, SessionSnapshot
from .limits import check_init_ids, check_json, new_id
from .ownership import Action, principal_of, visible

if TYPE_CHECKING:
    from ..stores.base import SessionStore
    from .spec import AgentSpec

__all__ = [
    "RESUMABLE_STATUSES",
    "PreTurnFailureError",
    "answered_pause",
    "is_attempt",
    "load_session",
    "resumable",
    "session_of",
    "walk_back",
]

RESUMABLE_STATUSES = ("completed", "failed", "aborted")


def resumable(snap: SessionSnapshot) -> bool:
    """Whether a turn may continue from `snap` (DESIGN.md: completed, failed, aborted)."""
    return (snap.status or "completed") in RESUMABLE_STATUSES and snap.state is not None


class PreTurnFailureError(NbAgentsError):
    """A failure found before any turn ran (`error`, with its status): answered in-band, not thrown."""

    def __init__(self, error: NbAgentsError) -> None:
        super().__init__(error.message, status=error.status, details=error.details)
        self.error = error


async def load_session(
    spec: AgentSpec,
    init: AgentInit,
    *,
    context: Mapping[str, Any] | None = None,
    action: Action = "message",
) -> tuple[Session, str | None, str | None]:
    """The session an invocation starts from, the snapshot it continues, and its owner.

    Raises the misuse errors (thrown, as in Genkit) directly, and wraps the
    pre-turn failures (an unknown or unresumable snapshot, answered as a
    graceful ``failed`` output) in `PreTurnFailureError`. A snapshot the caller
    may not `action` (another agent's, another owner's: `ownership.visible`) is
    answered exactly as an unknown one, before anything else about it is said.
    A new session belongs to the caller's principal.
    """
    principal = principal_of(context)
    store, name = spec.store, spec.name
    check_init_ids(init)
    if init.state is not None and store is not None:
        raise FailedPreconditionError(
            f"Cannot send 'state' to agent '{name}': this agent uses a server-managed store. "
            "Send 'snapshotId' or 'sessionId' instead."
        )
    if (init.snapshot_id or init.session_id is not None) and store is None:
        which = "snapshotId" if init.snapshot_id else "sessionId"
        raise FailedPreconditionError(
            f"Cannot use '{which}' with agent '{name}': this agent has no store configured "
            "(client-managed state). Send 'state' instead."
        )
    if store is None:
        state = init.state
        if state is None:
            return Session(new_id()), None, None
        if spec.signer is not None:
            state = spec.signer.verify(state, name)  # signed by this agent: written by it, so writable
        else:
            check_json(state, "init.state")
        return Session.from_state(state, state.session_id or new_id()), None, None

    if init.snapshot_id:
        read = store.get_snapshot
        if action == "resume":
            # an answer claims the row next, in this task: a store may answer from its own copy and
            # have the claim check it (PostgreSQL; else `ReadAgainError`, and `Turn.claim` loads again)
            read = getattr(store, "get_snapshot_to_claim", read)
        snap = await read(init.snapshot_id)
        if snap is None or not visible(
            snap, agent=name, context=context, action=action, authorize=spec.authorize
        ):
            raise PreTurnFailureError(NotFoundError(f"Snapshot {init.snapshot_id} not found."))
        if init.session_id and snap.session_id != init.session_id:
            raise InvalidArgumentError(
                f"Snapshot {snap.snapshot_id} does not belong to session {init.session_id} "
                f"(it belongs to {snap.session_id})."
            )
        if (snap.status or "completed") not in RESUMABLE_STATUSES or snap.state is None:  # `resumable`
            raise PreTurnFailureError(
                FailedPreconditionError(
                    f"Snapshot {snap.snapshot_id} is not resumable (status: {snap.status}). "
                    "Only 'completed', 'failed' and 'aborted' snapshots can be resumed."
                )
            )
        if action == "resume" and snap.answer is not None:  # else `snap` is the pause itself
            snap = await answered_pause(store, snap)
        assert snap.state is not None
        return (
            Session.from_state(snap.state, snap.session_id or new_id()),
            snap.snapshot_id,
            snap.owner,
        )
    if init.session_id:
        leaf = await store.get_latest(init.session_id)
        if leaf is not None and not visible(
            leaf, agent=name, context=context, action=action, authorize=spec.authorize
        ):
            raise PreTurnFailureError(NotFoundError(f"Session {init.session_id} not found."))
        snap = await walk_back(store, init.session_id, leaf)
        if snap is None:
            return Session(init.session_id), None, leaf.owner if leaf is not None else principal
        if action == "resume" and snap.answer is not None:  # else `snap` is the pause itself
            snap = await answered_pause(store, snap)
        return session_of(snap, init.session_id), snap.snapshot_id, snap.owner
    return Session(new_id()), None, principal


def session_of(snap: SessionSnapshot, session_id: str) -> Session:
    """The live session of a stored snapshot: its state (the session's rules are read when needed)."""
    assert snap.state is not None
    return Session.from_state(snap.state, session_id)


def is_attempt(snap: SessionSnapshot) -> bool:
    """Whether `snap` is the row of an answer's turn that failed or was aborted (it names the answer).

    Such a row holds the conversation as the pause left it, so its interrupts
    look answerable; they are the pause's, answered already.
    """
    return snap.status in ("failed", "aborted") and snap.answer is not None and snap.parent_id is not None


async def answered_pause(store: SessionStore, snap: SessionSnapshot) -> SessionSnapshot:
    """The snapshot an answer to `snap`'s interrupts must be claimed on.

    An answer's turn that failed or was aborted leaves a row (`is_attempt`)
    whose interrupts are those of the pause it answered. An answer to them
    (through the session id, a second tab, another partial answer) is an
    answer to that pause, so it goes through the pause's claim: the same
    answer replays what happened, another is refused, and only ``retry=True``
    runs a tool that started again. `snap` itself when it is not such a row.
    """
    seen: set[str] = set()
    # `is_attempt`, inline (`load_session` tested `snap.answer`: almost no answer comes through such a row)
    while snap.answer is not None and snap.status in ("failed", "aborted") and snap.snapshot_id not in seen:
        seen.add(snap.snapshot_id)
        if snap.parent_id is None:
            break
        parent = await store.get_snapshot(snap.parent_id)
        if parent is None or parent.session_id != snap.session_id or not resumable(parent):
            break
        snap = parent
    return snap


async def walk_back(
    store: SessionStore, session_id: str, leaf: SessionSnapshot | None = None
) -> SessionSnapshot | None:
    """The session's leaf (read unless given), or its nearest ancestor that a turn may continue."""
    snap = leaf if leaf is not None else await store.get_latest(session_id)
    seen: set[str] = set()
    while snap is not None and not resumable(snap):
        if snap.snapshot_id in seen:
            raise FailedPreconditionError(f"Snapshot lineage of session {session_id} has a cycle.")
        seen.add(snap.snapshot_id)
        snap = await store.get_snapshot(snap.parent_id) if snap.parent_id else None
    return snap
