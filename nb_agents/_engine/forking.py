"""Forks: a paused turn copied into a session of its own, to be answered differently.

An answer to a paused snapshot takes effect once: the claim is keyed on the
snapshot, and a different answer to it is refused (``already resumed``). To
ask "what if I had said no", the pause is copied: the fork is an ordinary
snapshot, with a new id, in a new session, holding the same state (so the same
interrupts, with the same refs), and its record says which snapshot it was
forked from (``fork_of``). Its answers are claimed on its own id, so each
branch runs its tools once.

Why a session of its own rather than a branch inside the original session: a
session's latest snapshot is its newest leaf, so a sibling branch would take
over the original session (``chat(session_id=...)``, ``agent.pending()``);
a session per fork keeps both pauses listed and both sessions continuable by
id. The fork keeps the original's agent and owner (issue 13: a session
belongs to a principal and an agent), whoever forks it.

The ids are derived, so a retried fork writes once: the fork's snapshot id is
a UUID (version 5) of the paused snapshot's id and the fork's `key`, and its
session id is the family's root session id, ``~fork-`` and that UUID's hex
(a fork of a fork is named from the same root, so names never grow). The row
is created only if it is not there (a second write with the same key finds it
and changes nothing). Listing a session's forks reads the ids of the sessions
of its family, and each fork's first row.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from ..errors import FailedPreconditionError, InvalidArgumentError, NotFoundError
from ..stores.base import SessionStore, now_iso
from ..types import Message, SessionSnapshot
from .limits import MAX_ID_LENGTH, check_id
from .loading import answered_pause, resumable
from .ownership import visible

if TYPE_CHECKING:
    from .spec import AgentSpec

__all__ = ["FORK_MARK", "fork_ids", "fork_snapshot", "forks_of", "is_paused"]

FORK_MARK = "~fork-"
"""What separates a fork's session id from its family's root session id."""

_NAMESPACE = uuid.UUID("5f0c1e2a-7d4b-4c8e-9a61-3b2f6e8d0c14")  # nb_agents forks (any fixed UUID)


def is_paused(snap: SessionSnapshot) -> bool:
    """Whether `snap` is a paused turn: it ended ``interrupted`` and its last message asks."""
    if not resumable(snap) or snap.finish_reason != "interrupted" or snap.state is None:
        return False
    msgs = snap.state.messages
    return bool(msgs) and msgs[-1].role == "model" and bool(msgs[-1].interrupts())


def fork_ids(session_id: str, paused_id: str, key: str) -> tuple[str, str]:
    """The fork's ``(snapshot_id, session_id)``: the same for the same pause and key.

    Example:
        >>> sid, sess = fork_ids("s1", "p1", "k")
        >>> sess == "s1~fork-" + sid.replace("-", "")
        True
        >>> fork_ids(sess, "p2", "k")[1].startswith("s1~fork-")
        True
    """
    fork_id = str(uuid.uuid5(_NAMESPACE, f"{paused_id}\x00{key}"))
    root = session_id.split(FORK_MARK, 1)[0]
    return fork_id, f"{root}{FORK_MARK}{uuid.UUID(fork_id).hex}"


def _root_id(session_id: str) -> str | None:
    """The first snapshot id of a fork's session (None: not a fork's session id)."""
    _, sep, tail = session_id.rpartition(FORK_MARK)
    if not sep:
        return None
    try:
        return str(uuid.UUID(hex=tail)) if len(tail) == 32 else None
    except ValueError:
        return None


async def fork_snapshot(
    spec: AgentSpec,
    snapshot_id: str | None,
    *,
    session_id: str | None = None,
    key: str | None = None,
    context: dict[str, Any] | None = None,
) -> SessionSnapshot:
    """Copy the paused snapshot (by id, or a session's latest) into a fork; return the fork's row.

    Raises:
        InvalidArgumentError: Neither or both of `snapshot_id` and `session_id`, or a bad id or key.
        NotFoundError: No such snapshot (or one the caller may not resume).
        FailedPreconditionError: The snapshot is not a paused turn, or the agent has no store.
    """
    store = spec.store
    if store is None:
        raise FailedPreconditionError(
            f"agent '{spec.name}' has no store configured (client-managed state): fork the chat "
            "instead (chat.fork() copies its state)"
        )
    if (snapshot_id is None) == (session_id is None):
        raise InvalidArgumentError("fork needs exactly one of snapshot_id and session_id")
    check_id(snapshot_id, "snapshot_id")
    check_id(session_id, "session_id")
    if key is not None and (not isinstance(key, str) or not key):
        raise InvalidArgumentError("fork key must be a non-empty string")
    if snapshot_id is not None:
        snap = await store.get_snapshot(snapshot_id)
        what = f"Snapshot {snapshot_id}"
    else:
        assert session_id is not None
        snap = await store.get_latest(session_id)
        what = f"Session {session_id}"
    if snap is None or not visible(
        snap, agent=spec.name, context=context, action="resume", authorize=spec.authorize
    ):
        raise NotFoundError(f"{what} not found.")
    snap = await answered_pause(store, snap)  # a failed or aborted answer's row: fork the pause it answered
    if not is_paused(snap):
        ended = snap.finish_reason or snap.status or "no turn"
        raise FailedPreconditionError(
            f"Cannot fork snapshot {snap.snapshot_id}: it is not a paused turn (it ended '{ended}'). "
            "Fork the snapshot of a turn that ended 'interrupted' (its response's snapshot_id).",
            details={
                "snapshotId": snap.snapshot_id,
                "finishReason": snap.finish_reason,
                "status": snap.status,
            },
        )
    assert snap.state is not None
    family = (
        snap.session_id or (snap.state.session_id if snap.state is not None else None) or snap.snapshot_id
    )
    fork_id, fork_session = fork_ids(family, snap.snapshot_id, key if key is not None else str(uuid.uuid4()))
    if len(fork_session) > MAX_ID_LENGTH:
        raise InvalidArgumentError(
            f"session {family} has an id too long to name its forks (at most "
            f"{MAX_ID_LENGTH - len(FORK_MARK) - 32} characters)"
        )
    now = now_iso()
    row = SessionSnapshot(
        snapshot_id=fork_id,
        session_id=fork_session,
        parent_id=None,  # the first row of its session: the paused one is named by fork_of
        created_at=now,
        updated_at=now,
        status="completed",
        finish_reason="interrupted",
        state=snap.state.model_copy(
            update={"session_id": fork_session, "messages": await _fork_messages(store, snap)}
        ),
        agent=snap.agent or spec.name,
        owner=snap.owner,
        fork_of=snap.snapshot_id,
    )
    await store.save_snapshot(fork_id, lambda cur: row if cur is None else None)
    stored = await store.get_snapshot(fork_id)
    if stored is None or stored.fork_of != snap.snapshot_id:  # a store that dropped the record
        raise FailedPreconditionError(f"the store did not keep fork {fork_id} of snapshot {snap.snapshot_id}")
    return stored


async def _fork_messages(store: SessionStore, snap: SessionSnapshot) -> list[Message]:
    """The paused history as the fork holds it: its pauses without deadlines, and marked where
    an answer to the original already started the call.

    A fork is answered by the person who made it, now: a deadline copied from the
    original (perhaps past) would apply its default instead of their answer. A call
    that an answer to the original started, in a turn that then failed or was
    aborted, may have acted: the fork's pause says so (``metadata.started``), and
    a restart of it runs only with ``retry=True``, as on the original.
    """
    assert snap.state is not None
    messages = list(snap.state.messages)
    started = await _started_calls(store, snap.snapshot_id)
    last = messages[-1]
    content = []
    for part in last.content:
        tr = part.tool_request
        if tr is not None and part.is_interrupt:
            attempt = started.get((tr.name, tr.ref))
            part = part.with_metadata(expiresAt=None, onExpiry=None, started=attempt)
        content.append(part)
    messages[-1] = last.model_copy(update={"content": content})
    return messages


async def _started_calls(store: SessionStore, paused_id: str) -> dict[tuple[str, str | None], dict[str, Any]]:
    """The calls of `paused_id` that an answer's failed or aborted turn started: ``{(name, ref): mark}``."""
    claim = await store.get_claim(paused_id)
    if claim is None:
        return {}
    attempt = await store.get_snapshot(claim.child_id)
    if attempt is None or attempt.status not in ("failed", "aborted") or not attempt.tool_runs:
        return {}
    mark = {"snapshotId": attempt.snapshot_id, "status": attempt.status}
    return {
        (str(run.get("name")), run.get("ref")): mark
        for run in attempt.tool_runs
        if run.get("outcome") != "not-run"
    }


async def forks_of(
    spec: AgentSpec, session_id: str, *, context: dict[str, Any] | None = None
) -> list[SessionSnapshot]:
    """The first rows of the forks made from `session_id`'s snapshots, oldest first."""
    store = spec.store
    if store is None:
        raise FailedPreconditionError(f"agent '{spec.name}' has no store configured; forks needs one")
    check_id(session_id, "session_id")
    prefix = session_id.split(FORK_MARK, 1)[0] + FORK_MARK
    found: list[SessionSnapshot] = []
    for sid in await store.session_ids():
        root = _root_id(sid) if sid.startswith(prefix) else None
        if root is None:
            continue
        row = await store.get_snapshot(root)
        if row is None or row.fork_of is None or row.session_id != sid:
            continue
        parent = await store.get_snapshot(row.fork_of)
        if parent is None or parent.session_id != session_id:
            continue  # a fork of another session of the family
        if visible(row, agent=spec.name, context=context, action="read", authorize=spec.authorize):
            found.append(row)
    found.sort(key=lambda r: (r.created_at or "", r.snapshot_id))
    return found
