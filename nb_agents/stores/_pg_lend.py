"""An answer's read of the pause it claims, from this process's copy, checked by the claim.

An answer to a paused turn reads the pause (the engine's ``load_session``),
decides on it (may this caller answer it, can it be resumed, does the answer
fit its interrupts), then claims it. On PostgreSQL that read is a
transaction of its own, yet the pause is nearly always a row that this
process has just written (the turn that paused) or read. So
`PostgresSessionStore.get_snapshot_to_claim` (only it: `get_snapshot` always
reads) answers from what `RecentRows` kept of such a row (`Copy`: its
columns, decoded exactly as a read decodes them, with the history from the
store's cache) and leaves in the task's context what it lent (`Lent`: the
row's ``seq`` and ``rev``, its session's agent and owner). The claim's
statement claims only if the row is still that one (`GUARD`): the decision
was then made on the row as it was when claimed, as if it had been read
then. When it is not (another process or store wrote the row, the session
got an owner, the row is gone), the claim writes nothing and the store
raises `ReadAgainError`: the engine reads the row again, from the database
this time, and decides on it as it would have.

Lent are only rows that the answer claims themselves, and that no writer
of the engine rewrites: a settled row (``completed``, ``failed``,
``aborted``, where no heartbeat makes it read ``expired``) that is not an
answer's failed attempt (an answer through it is claimed on the pause it
answered) and whose pause has no deadline (applying a default runs another
answer in the same task). Every other read reads.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError
from ..types import Message, SessionSnapshot
from ._delta import ChainLink, MessageCache, decode_snapshot, history

if TYPE_CHECKING:
    import psycopg

__all__ = ["GUARD", "MOVED", "Copy", "Lender", "Lent", "lendable", "still_holds"]

MOVED = "moved"  # a claim's answer: the lent row is not as lent (nothing was written)

# the row as lent, still: the claim inserts FROM it (parameters c_id and g_*)
GUARD = """g AS (SELECT 1 FROM nb_agents_snapshots s
        LEFT JOIN nb_agents_sessions ss ON ss.session_id = s.session_id
        WHERE s.snapshot_id = %(c_id)s AND s.seq = %(g_seq)s AND s.rev = %(g_rev)s
            AND ss.agent IS NOT DISTINCT FROM %(g_agent)s::text
            AND ss.owner IS NOT DISTINCT FROM %(g_owner)s::text)"""


@dataclass(frozen=True, slots=True)
class Copy:
    """What a read decodes a row from, but its history (in the store's cache by ``(seq, rev)``)."""

    meta: str
    state: str | None
    tail: str | None
    has_base: bool
    agent: str | None  # the session's, as the read joins them
    owner: str | None


@dataclass(frozen=True, slots=True)
class Lent:
    """A lent row: what the claim checks is still so."""

    seq: int
    rev: int
    agent: str | None
    owner: str | None

    def params(self) -> dict[str, Any]:
        return {"g_seq": self.seq, "g_rev": self.rev, "g_agent": self.agent, "g_owner": self.owner}


def lendable(snap: SessionSnapshot) -> bool:
    """Whether an answer's read of `snap` may be answered from a copy (see the module's docstring)."""
    status = snap.status or "completed"
    if status not in ("completed", "failed", "aborted") or snap.state is None:
        return False
    if snap.answer is not None and status != "completed":
        return False  # an answer's attempt: the answer is claimed on its parent
    messages = snap.state.messages
    last = messages[-1] if messages else None
    return not (
        last is not None
        and last.role == "model"
        and any(p.metadata and "expiresAt" in p.metadata for p in last.content)
    )


class _NotCachedError(NotFoundError):
    """The history of a row is not in the cache: the row is read instead (internal)."""


def _no_chain() -> list[ChainLink]:
    raise _NotCachedError("not cached")  # the history is not in the cache: the row is read instead


# (the store's Lender, the snapshot id) -> what was lent, in this task and the tasks it starts
_LENT: ContextVar[dict[tuple[object, str], Lent] | None] = ContextVar("nb_agents_pg_lent", default=None)


class Lender:
    """The copies one store lent, per task (`contextvars`): a claim finds what its task's read got."""

    def lend(
        self, entry: tuple[int, int, Copy | None] | None, cache: MessageCache, snapshot_id: str
    ) -> SessionSnapshot | None:
        """The row from `entry` (``(seq, rev, copy)``), decoded as a read would, or None (read it)."""
        copy = entry[2] if entry is not None else None
        if entry is None or copy is None:
            self.drop(snapshot_id)  # read from the database: an older copy lent in this task is no more
            return None
        seq, rev = entry[0], entry[1]

        def messages() -> list[Message]:
            return history(cache, seq, rev, copy.has_base, copy.tail, _no_chain)

        try:
            snap = decode_snapshot(copy.meta, copy.state, copy.tail, messages, copy.agent, copy.owner)
        except _NotCachedError:
            self.drop(snapshot_id)
            return None
        lent = dict(_LENT.get() or {})
        lent[(self, snapshot_id)] = Lent(seq, rev, copy.agent, copy.owner)
        _LENT.set(lent)
        return snap

    def lent(self, snapshot_id: str) -> Lent | None:
        """What this task's read of the row was answered from, if it was lent."""
        found = _LENT.get()
        return found.get((self, snapshot_id)) if found else None

    def drop(self, snapshot_id: str) -> None:
        found = _LENT.get()
        if found and (self, snapshot_id) in found:
            _LENT.set({k: v for k, v in found.items() if k != (self, snapshot_id)})


def still_holds(conn: psycopg.Connection[Any], snapshot_id: str, lent: Lent) -> bool:
    """Whether the row is still as lent (for a claim that takes the general path)."""
    got = conn.execute(
        f"WITH {GUARD} SELECT EXISTS (SELECT 1 FROM g)", {"c_id": snapshot_id, **lent.params()}
    )
    row = got.fetchone()
    return bool(row and row[0])
