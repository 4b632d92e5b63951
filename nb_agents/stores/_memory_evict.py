"""Eviction from a bounded `InMemorySessionStore`: which sessions go, and what is said of a waiting one.

Beyond ``max_sessions`` the least recently used sessions go, and a session not
touched for ``ttl`` goes (`evict`, run by the store around every operation). A
session whose turn is running or whose claim is unfinished is never evicted.

Every other session goes when its turn comes, whatever it holds, so that the
bound holds however clients behave. A session waiting for an answer (a pause
that ended ``interrupted`` and that nobody has claimed) is a person's work in
progress, so its eviction is never silent: it is logged (a warning on
``nb_agents.stores`` naming the session and the bound), and the store remembers
the session's id and its paused snapshots' ids (`Evictions`), so that asking for
one later (an answer, ``getSnapshot``, a message to the session) is refused with
``NOT_FOUND`` saying it was evicted and why, instead of "not found" or a silent
new session. The most recent `REMEMBERED` ids are kept, so what this takes is
bounded too.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import NotFoundError
from ..types import SessionSnapshot
from .base import effective_status

if TYPE_CHECKING:
    from .memory import _Rows

__all__ = ["REMEMBERED", "Evictions", "evict"]

log = logging.getLogger("nb_agents.stores")

REMEMBERED = 4096
"""How many ids of evicted waiting sessions (and of their pauses) a store remembers."""


def evict(rows: _Rows, *, idle_only: bool = False) -> None:
    """Drop the sessions idle past `ttl` and, unless `idle_only`, those beyond `max_sessions`
    (least recent first; never the one used last, which the current operation used)."""
    touched = rows.touched
    if not touched:
        return
    over = len(touched) - rows.max_sessions if rows.max_sessions is not None and not idle_only else 0
    stale_before = time.monotonic() - rows.ttl if rows.ttl is not None else None
    if over <= 0 and (stale_before is None or next(iter(touched.values())) >= stale_before):
        return  # the common case: nothing to do, decided in O(1)
    victims: list[tuple[str, bool]] = []
    last = next(reversed(touched))
    for session_id, at in touched.items():
        stale = stale_before is not None and at < stale_before
        if (over <= len(victims) and not stale) or (session_id == last and not idle_only):
            break  # the rest were used later
        if not _busy(rows, session_id):
            victims.append((session_id, stale))
    for session_id, stale in victims:
        paused = _paused(rows, session_id)
        if paused:
            why = f"unused for {rows.ttl:g} s, its ttl" if stale else f"over max_sessions={rows.max_sessions}"
            rows.evicted.note(session_id, paused, why)
        rows._drop_session(session_id)


def _busy(rows: _Rows, session_id: str) -> bool:
    """Whether a turn of the session runs (a fresh pending row) or a claim of it is unfinished."""
    for snapshot_id in rows.by_session.get(session_id, ()):
        snap = rows._decode(snapshot_id)
        if snap is not None and _running(rows, snap):
            return True
        claim = rows.claims.get(snapshot_id)
        if claim is not None:
            child = rows._decode(claim.child_id)
            if child is None or _running(rows, child):
                return True
    return False


def _running(rows: _Rows, snap: SessionSnapshot) -> bool:
    return snap.status == "pending" and effective_status(snap, timeout=rows.heartbeat_timeout) == "pending"


def _paused(rows: _Rows, session_id: str) -> list[str]:
    """The session's pauses nobody answered: leaves that ended ``interrupted``, unclaimed."""
    snaps = [s for i in rows.by_session.get(session_id, ()) if (s := rows._decode(i)) is not None]
    parents = {s.parent_id for s in snaps}
    return [
        s.snapshot_id
        for s in snaps
        if s.snapshot_id not in parents
        and s.snapshot_id not in rows.claims
        and (s.status, s.finish_reason) == ("completed", "interrupted")
    ]


class Evictions:
    """The waiting sessions a store evicted, by session id and paused snapshot id."""

    def __init__(self) -> None:
        self._said: OrderedDict[str, str] = OrderedDict()

    def note(self, session_id: str, paused: Sequence[str], why: str) -> None:
        """Session `session_id`, waiting on the snapshots `paused`, was evicted because `why`."""
        log.warning(
            "evicted session %s while it waited for an answer (%s); an answer to it will be refused "
            "as evicted. Keep sessions in a persistent store to keep waiting ones.",
            session_id,
            why,
        )
        said = (
            f"was evicted from the in-memory session store while it waited for an answer ({why}); "
            "its conversation is gone. Start a new session, or keep sessions in a persistent store "
            "(SqliteSessionStore; nb-agents serve --store sqlite:///agents.db)."
        )
        for key, what in ((session_id, f"Session {session_id}"), *((p, f"Snapshot {p}") for p in paused)):
            self._said[key] = f"{what} {said}"
            self._said.move_to_end(key)
        while len(self._said) > REMEMBERED:
            self._said.popitem(last=False)

    def check(self, key: str) -> None:
        """Raise ``NOT_FOUND`` naming the eviction if `key` (a session or snapshot id) was evicted so."""
        said = self._said.get(key)
        if said is not None:
            raise NotFoundError(said)
