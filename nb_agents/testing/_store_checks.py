"""The checks of the store conformance suite: rows, leaves, reads (`RowChecks`).

`StoreConformance` (in `.stores`, with the claims and audit checks of
`._claim_checks`) is what a store's tests subclass. Imported through
`.stores`, which registers it for pytest's assertion rewriting first.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ..stores.base import SessionStore
from ..types import AgentErrorInfo, Artifact, SessionSnapshot, SessionState
from ._store_samples import RICH, answer, msg, put, snap, ts

__all__ = ["RowChecks"]


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class RowChecks:
    """The checks of rows and reads (a mixin of `StoreConformance`, which has the fixtures)."""

    # -- rows ---------------------------------------------------------------------------
    async def test_is_a_session_store(self, store: SessionStore) -> None:
        assert isinstance(store, SessionStore)
        assert isinstance(store.poll_interval, int | float) and store.poll_interval > 0

    async def test_round_trip_keeps_every_field(self, store: SessionStore) -> None:
        rich = SessionSnapshot.model_validate(RICH)
        written = await store.save_snapshot("snap-1", lambda cur: rich)
        assert written is not None and written.to_wire() == RICH
        got = await store.get_snapshot("snap-1")
        assert got is not None and got.to_wire() == RICH  # unknown fields too
        assert await store.get_snapshot("nope") is None

    async def test_pending_and_failed_rows_round_trip(self, store: SessionStore) -> None:
        now = _iso(datetime.now(UTC))
        pending = SessionSnapshot(
            snapshot_id="p",
            session_id="s1",
            created_at=now,
            updated_at=now,
            heartbeat_at=now,
            status="pending",
        )
        failed = snap("f", created=1, error=AgentErrorInfo(status="INTERNAL", message="boom"))
        failed = failed.model_copy(update={"status": "failed", "finish_reason": "failed"})
        await put(store, pending)
        await put(store, failed)
        got_pending, got_failed = await store.get_snapshot("p"), await store.get_snapshot("f")
        assert got_pending is not None and got_pending.state is None and got_pending.status == "pending"
        assert got_pending.to_wire() == pending.to_wire()
        assert got_failed is not None and got_failed.to_wire() == failed.to_wire()
        assert got_failed.error is not None and got_failed.error.message == "boom"

    async def test_unusual_values_round_trip(self, store: SessionStore) -> None:
        odd = 'lone \ud800 surrogate, NUL \x00, emoji 😀, quote " and backslash \\'
        value = SessionSnapshot.model_validate(
            {
                "snapshotId": "odd",
                "sessionId": "s1",
                "status": "completed",
                "state": {"custom": {"text": odd, "n": [1, 1.5, True, None]}},  # messages never set
            }
        )
        await put(store, value)
        child = snap("kid", parent_id="odd", messages=[msg("user", odd)])
        await put(store, child)
        got, kid = await store.get_snapshot("odd"), await store.get_snapshot("kid")
        assert got is not None and got.to_wire() == value.to_wire()
        assert "messages" not in got.to_wire()["state"]
        assert kid is not None and kid.to_wire() == child.to_wire()

    # -- saves --------------------------------------------------------------------------
    async def test_mutator_returning_none_writes_nothing(self, store: SessionStore) -> None:
        assert await store.save_snapshot("x", lambda cur: None) is None
        assert await store.get_snapshot("x") is None
        assert await store.session_ids() == []
        await put(store, snap("x"))
        assert await store.save_snapshot("x", lambda cur: None) is None
        got = await store.get_snapshot("x")
        assert got is not None and got.to_wire() == snap("x").to_wire()

    async def test_mutator_sees_the_current_row(self, store: SessionStore) -> None:
        seen: list[SessionSnapshot | None] = []

        def bump(cur: SessionSnapshot | None) -> SessionSnapshot:
            seen.append(cur)
            count = 0 if cur is None or cur.state is None else cur.state.custom["n"] + 1
            state = SessionState(session_id="s1", messages=[msg("user", "hi")], custom={"n": count})
            return SessionSnapshot(snapshot_id="x", session_id="s1", status="completed", state=state)

        first = await store.save_snapshot("x", bump)
        second = await store.save_snapshot("x", bump)
        assert seen[0] is None
        assert seen[1] is not None and first is not None and seen[1].to_wire() == first.to_wire()
        assert second is not None and second.state is not None and second.state.custom == {"n": 1}
        got = await store.get_snapshot("x")
        assert got is not None and got.state is not None and got.state.custom == {"n": 1}

    async def test_a_mutator_that_raises_writes_nothing(self, store: SessionStore) -> None:
        def boom(cur: SessionSnapshot | None) -> SessionSnapshot:
            raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            await store.save_snapshot("x", boom, audit=[answer(1, snapshot_id="x")])
        assert await store.get_snapshot("x") is None
        assert await store.session_ids() == [] and await store.audit("s1") == []
        await put(store, snap("x"))
        with pytest.raises(RuntimeError, match="boom"):
            await store.save_snapshot("x", boom, audit=[answer(2, snapshot_id="x")])
        got = await store.get_snapshot("x")
        assert got is not None and got.to_wire() == snap("x").to_wire()
        assert await store.audit("s1") == []

    async def test_store_owns_the_id_and_keeps_the_session(self, store: SessionStore) -> None:
        await put(store, snap("x", session_id="s1"))
        written = await store.save_snapshot("x", lambda cur: snap("other", session_id="s2"))
        assert written is not None and written.snapshot_id == "x" and written.session_id == "s1"
        got = await store.get_snapshot("x")
        assert got is not None and got.session_id == "s1"
        assert await store.get_snapshot("other") is None
        assert await store.session_ids() == ["s1"]

    async def test_detached_row_settles_in_place(self, store: SessionStore) -> None:
        """A pending row (no state) is rewritten by the turn's final write, as a detached turn does."""
        history = [msg("user", "one"), msg("model", "two")]
        await put(store, snap("root", messages=history))
        pending = SessionSnapshot(snapshot_id="p", session_id="s1", parent_id="root", status="pending")
        await put(store, pending)
        final = snap(
            "p", parent_id="root", created=1, messages=[*history, msg("user", "3"), msg("model", "4")]
        )
        seen: list[SessionSnapshot | None] = []

        def settle(cur: SessionSnapshot | None) -> SessionSnapshot:
            seen.append(cur)
            return final

        await store.save_snapshot("p", settle)
        assert seen[0] is not None and seen[0].to_wire() == pending.to_wire()
        got = await store.get_snapshot("p")
        assert got is not None and got.to_wire() == final.to_wire()
        latest = await store.get_latest("s1")
        assert latest is not None and latest.snapshot_id == "p"

    # -- leaves and sessions ------------------------------------------------------------
    async def test_latest_is_the_newest_leaf(self, store: SessionStore) -> None:
        await put(store, snap("root", created=0))
        await put(store, snap("a", parent_id="root", created=10))
        await put(store, snap("b", parent_id="root", created=5))
        await put(store, snap("other-session", session_id="s2", created=99))
        latest = await store.get_latest("s1")
        assert latest is not None and latest.snapshot_id == "a"  # two leaves: the newer wins
        await put(store, snap("b1", parent_id="b", created=7))
        latest = await store.get_latest("s1")
        assert latest is not None and latest.snapshot_id == "a"  # b1 is a leaf but older than a
        await put(store, snap("a1", parent_id="a", created=6))
        latest = await store.get_latest("s1")
        assert latest is not None and latest.snapshot_id == "b1"  # a is no longer a leaf
        assert await store.get_latest("unknown") is None
        # a child in another session does not make its parent a non-leaf of this one
        await put(store, snap("fork", session_id="s3", parent_id="b1", created=50))
        latest = await store.get_latest("s1")
        assert latest is not None and latest.snapshot_id == "b1"

    async def test_latest_breaks_created_at_ties_by_id(self, store: SessionStore) -> None:
        await put(store, snap("m", created=3))
        await put(store, snap("z", created=3))
        await put(store, snap("k", created=3))
        latest = await store.get_latest("s1")
        assert latest is not None and latest.snapshot_id == "z"

    async def test_session_ids_oldest_first(self, store: SessionStore) -> None:
        await put(store, snap("a", session_id="first", created=0))
        await put(store, snap("b", session_id="second", created=1))
        await put(store, snap("c", session_id="first", parent_id="a", created=2))
        assert await store.session_ids() == ["first", "second"]

    async def test_stale_pending_row_reads_expired(self, store: SessionStore) -> None:
        """A heartbeat older than the store's `heartbeat_timeout` reads expired; a younger one pending."""
        timeout = store.heartbeat_timeout
        young = _iso(datetime.now(UTC) - timeout / 4)
        await put(
            store, SessionSnapshot(snapshot_id="y", session_id="s0", heartbeat_at=young, status="pending")
        )
        got = await store.get_snapshot("y")
        assert got is not None and got.status == "pending"
        old = _iso(datetime.now(UTC) - timeout * 1.25 - timedelta(seconds=1))
        stale = SessionSnapshot(
            snapshot_id="p", session_id="s1", created_at=old, heartbeat_at=old, status="pending"
        )
        await put(store, stale)
        got = await store.get_snapshot("p")
        assert got is not None and got.status == "expired"
        latest = await store.get_latest("s1")
        assert latest is not None and latest.snapshot_id == "p" and latest.status == "expired"
        # what is stored is still pending: a fresh heartbeat makes it read pending again
        seen: list[str | None] = []

        def beat(cur: SessionSnapshot | None) -> SessionSnapshot | None:
            seen.append(cur.status if cur else None)
            return cur.model_copy(update={"heartbeat_at": _iso(datetime.now(UTC))}) if cur else None

        await store.save_snapshot("p", beat)
        assert seen == ["pending"]
        got = await store.get_snapshot("p")
        assert got is not None and got.status == "pending"

    # -- whose session ------------------------------------------------------------------
    async def test_agent_and_owner_round_trip(self, store: SessionStore) -> None:
        """nb_agents' bookkeeping (``agent``, ``owner``) reads back on every row of a session."""
        pending = SessionSnapshot(
            snapshot_id="k", session_id="s1", parent_id="r", status="pending", agent="bank", owner="ana"
        )
        await put(store, snap("r", agent="bank", owner="ana"))
        written = await store.save_snapshot("k", lambda cur: pending)
        assert written is not None and (written.agent, written.owner) == ("bank", "ana")
        for read in (
            await store.get_snapshot("r"),
            await store.get_snapshot("k"),
            await store.get_latest("s1"),
        ):
            assert read is not None and (read.agent, read.owner) == ("bank", "ana")
        final = snap("k", parent_id="r", created=1, agent="bank", owner="ana")
        await store.save_snapshot("k", lambda cur: final)
        got = await store.get_snapshot("k")
        assert got is not None and got.to_wire() == final.to_wire()
        await put(store, snap("x", session_id="s2", agent="helper"))  # no owner: None stays None
        other = await store.get_snapshot("x")
        assert other is not None and (other.agent, other.owner) == ("helper", None)

    async def test_a_row_keeps_its_agent_and_owner(self, store: SessionStore) -> None:
        """As it keeps its session: a rewrite naming another agent or owner does not move the row."""
        await put(store, snap("r", agent="bank", owner="ana"))
        written = await store.save_snapshot("r", lambda cur: snap("r", created=1, agent="other", owner="eve"))
        assert written is not None and (written.agent, written.owner) == ("bank", "ana")
        got = await store.get_snapshot("r")
        assert got is not None and (got.agent, got.owner) == ("bank", "ana") and got.created_at == ts(1)

    # -- a session's rules ---------------------------------------------------------------
    async def test_a_save_adds_its_rules_to_the_session_once(self, store: SessionStore) -> None:
        """Rules are the session's: a save adds the ones its turn made (none twice), in its write."""
        assert await store.get_rules("s1") == []
        rule = {"id": "always-1", "tool": "readTable", "action": "allow", "ref": "t1"}
        await store.save_snapshot("a", lambda cur: snap("a"), add_rules=[rule])
        await store.save_snapshot("b", lambda cur: snap("b", parent_id="a", created=1), add_rules=[rule])
        assert await store.get_rules("s1") == [rule]
        assert await store.get_rules("s2") == []
        # a save that writes nothing adds nothing
        other = {"id": "always-2", "tool": "dropTable", "action": "allow"}
        assert await store.save_snapshot("a", lambda cur: None, add_rules=[other]) is None
        assert await store.get_rules("s1") == [rule]
        got = await store.get_rules("s1")
        got[0]["tool"] = "changed by the caller"
        got.append(other)
        assert await store.get_rules("s1") == [rule]  # a read is the caller's copy

    async def test_a_dropped_rule_stays_dropped_whichever_row_is_written_next(
        self, store: SessionStore
    ) -> None:
        first = {"id": "always-1", "tool": "readTable", "action": "allow"}
        second = {"id": "always-2", "tool": "dropTable", "action": "allow"}
        await store.save_snapshot("a", lambda cur: snap("a"), add_rules=[first, second])
        revoked = answer(1)
        assert await store.drop_rule("s1", "always-1", audit=[revoked]) == first
        assert await store.drop_rule("s1", "always-1", audit=[answer(2)]) is None  # no second record
        # a turn continuing from the old row writes a new one: the revoked rule does not come back
        await store.save_snapshot("b", lambda cur: snap("b", parent_id="a", created=1))
        assert await store.get_rules("s1") == [second]
        assert [r.ref for r in await store.audit("s1")] == ["t1"]
        assert await store.drop_rule("s1", "always-2") == second
        assert await store.get_rules("s1") == []
        assert await store.drop_rule("nobody", "always-2") is None

    async def test_get_claim_reads_the_claim(self, store: SessionStore) -> None:
        await put(store, snap("root"))
        assert await store.get_claim("root") is None
        assert await store.claim_resume("root", "d1", "kid") is None
        found = await store.get_claim("root")
        assert found is not None and (found.digest, found.child_id, found.generation) == ("d1", "kid", 1)

    # -- what a caller holds ----------------------------------------------------------
    async def test_reads_do_not_alias_what_is_stored(self, store: SessionStore) -> None:
        """A caller that changes the lists of a snapshot it saved, read, or was handed
        by a mutator changes nothing in the store."""
        saved = snap("a", messages=[msg("user", "one"), msg("model", "two")])
        want = saved.to_wire()
        written = await store.save_snapshot("a", lambda cur: saved)
        assert written is not None and written.state is not None and saved.state is not None
        saved.state.messages.append(msg("user", "appended to the saved value"))
        written.state.messages.append(msg("user", "appended to the returned value"))
        for read in (await store.get_snapshot("a"), await store.get_latest("s1")):
            assert read is not None and read.state is not None
            read.state.messages.append(msg("user", "appended to a read"))
            read.state.artifacts.append(Artifact(name="added"))

        def peek(cur: SessionSnapshot | None) -> None:
            assert cur is not None and cur.state is not None
            cur.state.messages.clear()

        assert await store.save_snapshot("a", peek) is None
        got = await store.get_snapshot("a")
        assert got is not None and got.to_wire() == want
        latest = await store.get_latest("s1")
        assert latest is not None and latest.to_wire() == want
