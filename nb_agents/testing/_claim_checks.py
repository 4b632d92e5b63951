"""The checks of the store conformance suite: claims, audit, concurrency (`ClaimChecks`).

Imported through `.stores`, which registers it for pytest's assertion rewriting first.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import anyio.to_thread

from ..errors import StaleClaimError
from ..stores.base import AuditRecord, Fence, ResumeClaim, SessionStore
from ..types import SessionSnapshot, SessionState
from ._store_samples import answer, put, snap, ts

__all__ = ["ClaimChecks"]

CONCURRENCY = 12  # claims or saves racing at once


def _bump(cur: SessionSnapshot | None) -> SessionSnapshot:
    """A read-modify-write of a counter in the row's custom state."""
    n = 0 if cur is None or cur.state is None else cur.state.custom
    return SessionSnapshot(snapshot_id="c", session_id="s1", state=SessionState(custom=n + 1))


def _one_winner(results: dict[str, ResumeClaim | None]) -> None:
    """Exactly one claim of ``child-<i>`` (digest ``d<i>``) won; every other got the winner back."""
    winners = [child for child, res in results.items() if res is None]
    assert len(winners) == 1, f"claims that won: {winners}"
    won = ResumeClaim(f"d{winners[0].split('-')[1]}", winners[0])
    assert {res for res in results.values() if res is not None} == {won}


class ClaimChecks:
    """The checks of the compare-and-swap of a resume, the audit trail, and races (a mixin
    of `StoreConformance`, which has the fixtures)."""

    # -- claims -------------------------------------------------------------------------
    async def test_claim_resume_first_wins(self, store: SessionStore) -> None:
        assert await store.claim_resume("snap", "digest-1", "child-1") is None
        assert await store.claim_resume("snap", "digest-1", "child-2") == ResumeClaim("digest-1", "child-1")
        assert await store.claim_resume("snap", "digest-2", "child-3") == ResumeClaim("digest-1", "child-1")
        assert await store.claim_resume("other", "digest-2", "child-4") is None

    async def test_replace_claim_bumps_the_generation_only_from_the_expected_claim(
        self, store: SessionStore
    ) -> None:
        assert await store.claim_resume("snap", "d1", "child-1") is None
        first = ResumeClaim("d1", "child-1", 1)
        assert await store.claim_resume("snap", "d1", "child-x") == first
        pending = SessionSnapshot(snapshot_id="x", session_id="s1", parent_id="snap", status="pending")
        assert await store.replace_claim("snap", first, "d1", "child-2", pending=pending) is None
        second = ResumeClaim("d1", "child-2", 2)
        assert await store.claim_resume("snap", "d9", "child-y") == second
        got = await store.get_snapshot("child-2")
        assert got is not None and got.status == "pending" and got.parent_id == "snap"
        # a stale expectation loses and writes nothing
        assert await store.replace_claim("snap", first, "d1", "child-3", pending=pending) == second
        assert await store.get_snapshot("child-3") is None
        assert await store.replace_claim("snap", second, "d1", "child-3") is None
        assert await store.claim_resume("snap", "d1", "child-z") == ResumeClaim("d1", "child-3", 3)

    async def test_concurrent_replacements_have_one_winner(self, store: SessionStore) -> None:
        assert await store.claim_resume("snap", "d1", "child-0") is None
        first = ResumeClaim("d1", "child-0", 1)
        results = await asyncio.gather(
            *(store.replace_claim("snap", first, "d1", f"child-{i}") for i in range(1, CONCURRENCY + 1))
        )
        assert sum(r is None for r in results) == 1
        held = await store.claim_resume("snap", "d1", "nobody")
        assert held is not None and held.generation == 2
        assert all(r == held for r in results if r is not None)

    async def test_a_fenced_save_after_a_replacement_is_refused_and_writes_nothing(
        self, store: SessionStore
    ) -> None:
        await put(store, snap("root"))
        assert await store.claim_resume("root", "d1", "child-1") is None
        fence = Fence("root", "child-1", 1)
        row = SessionSnapshot(snapshot_id="child-1", session_id="s1", parent_id="root", status="completed")
        record = answer(1, "s1", "root", "child-1")
        assert await store.save_snapshot("child-1", lambda cur: row, audit=[record], fence=fence) is not None
        assert await store.replace_claim("root", ResumeClaim("d1", "child-1", 1), "d1", "child-2") is None
        late = row.model_copy(update={"status": "failed"})
        try:
            await store.save_snapshot("child-1", lambda cur: late, audit=[record], fence=fence)
        except StaleClaimError:
            pass
        else:
            raise AssertionError("a save fenced with a replaced claim was written")
        got = await store.get_snapshot("child-1")
        assert got is not None and got.status == "completed"
        assert len(await store.audit("s1")) == 1
        unfenced = await store.save_snapshot("child-1", lambda cur: late)  # no fence: a plain save
        assert unfenced is not None and unfenced.status == "failed"

    async def test_release_claim_only_by_its_child(self, store: SessionStore) -> None:
        assert await store.claim_resume("snap", "d1", "child-1") is None
        await store.release_claim("snap", "someone-else")  # not the claimant's: kept
        assert await store.claim_resume("snap", "d2", "child-2") == ResumeClaim("d1", "child-1")
        await store.release_claim("snap", "child-1")
        assert await store.claim_resume("snap", "d2", "child-2") is None
        await store.release_claim("never-claimed", "x")  # a no-op

    async def test_a_winning_claim_writes_the_pending_row(self, store: SessionStore) -> None:
        await put(store, snap("root"))
        pending = SessionSnapshot(
            snapshot_id="ignored", session_id="s1", parent_id="root", created_at=ts(1), status="pending"
        )
        assert await store.claim_resume("root", "d1", "kid", pending=pending) is None
        got = await store.get_snapshot("kid")  # the store owns the id
        assert got is not None and got.to_wire() == {**pending.to_wire(), "snapshotId": "kid"}
        latest = await store.get_latest("s1")
        assert latest is not None and latest.snapshot_id == "kid"
        # a lost claim writes nothing
        other = pending.model_copy(update={"snapshot_id": "kid2"})
        assert await store.claim_resume("root", "d2", "kid2", pending=other) == ResumeClaim("d1", "kid")
        assert await store.get_snapshot("kid2") is None
        # a won claim keeps a row that exists
        await put(store, snap("root2", created=2))
        await put(store, snap("done", parent_id="root2", created=3))
        assert await store.claim_resume("root2", "d3", "done", pending=pending) is None
        got = await store.get_snapshot("done")
        assert got is not None and got.to_wire() == snap("done", parent_id="root2", created=3).to_wire()

    async def test_a_claim_made_before_its_snapshot_was_saved(self, store: SessionStore) -> None:
        assert await store.claim_resume("later", "d1", "kid") is None
        await put(store, snap("later"))
        await put(store, snap("kid", parent_id="later", created=1))
        assert await store.claim_resume("later", "d2", "kid2") == ResumeClaim("d1", "kid")
        await store.release_claim("later", "kid")
        assert await store.claim_resume("later", "d2", "kid2") is None
        assert await store.claim_resume("later", "d3", "kid3") == ResumeClaim("d2", "kid2")

    # -- audit --------------------------------------------------------------------------
    async def test_audit_is_kept_in_order(self, store: SessionStore) -> None:
        def rec(i: int, session_id: str = "s1", **kw: Any) -> AuditRecord:
            return AuditRecord(
                session_id,
                f"snap-{i}",
                f"child-{i}",
                "userApproval",
                f"ref{i}",
                "respond",
                {"ok": i},
                None,
                ts(i),
                **kw,
            )

        await store.add_audit([rec(1), rec(2, answered_by="ann", claimed_by="ann@laptop")])
        await store.add_audit([rec(3, session_id="s2")])
        await store.add_audit([])
        restart = AuditRecord(
            "s1", "snap-4", "child-4", "transfer", None, "restart", None, {"to": "bob"}, ts(4)
        )
        await store.add_audit([restart, rec(5)])
        got = await store.audit("s1")
        assert [r.snapshot_id for r in got] == ["snap-1", "snap-2", "snap-4", "snap-5"]
        assert got[0] == rec(1)
        assert got[1].answered_by == "ann" and got[1].answer == {"ok": 2}
        assert got[1].claimed_by == "ann@laptop" and got[0].claimed_by is None
        assert got[2] == restart and got[2].replaced_input == {"to": "bob"} and got[2].ref is None
        assert await store.audit("s2") == [rec(3, session_id="s2")]
        assert await store.audit("nobody") == []

    async def test_a_save_appends_its_audit_records_with_the_row(self, store: SessionStore) -> None:
        await put(store, snap("root"))
        await store.add_audit([answer(1, child_id="earlier")])
        kid = snap("kid", parent_id="root", created=1)
        written = await store.save_snapshot("kid", lambda cur: kid, audit=[answer(2), answer(3)])
        assert written is not None and written.to_wire() == kid.to_wire()
        claimed = AuditRecord(
            "s1", "root", "kid", "t", "r", "respond", 1, None, ts(9), answered_by="ana", claimed_by="bob"
        )
        await store.save_snapshot("kid", lambda cur: kid, audit=[claimed])
        # a save that writes nothing appends nothing
        assert await store.save_snapshot("kid", lambda cur: None, audit=[answer(4)]) is None
        # records about other snapshots and sessions are kept as given
        other = answer(5, session_id="s2", snapshot_id="elsewhere", child_id="nowhere")
        await store.save_snapshot("kid", lambda cur: kid, audit=[other])
        assert await store.audit("s1") == [answer(1, child_id="earlier"), answer(2), answer(3), claimed]
        assert await store.audit("s2") == [other]
        got = await store.get_snapshot("kid")
        assert got is not None and got.to_wire() == kid.to_wire()

    # -- races --------------------------------------------------------------------------
    async def test_concurrent_claims_have_one_winner(self, store: SessionStore) -> None:
        results: dict[str, ResumeClaim | None] = {}

        async def claim(i: int) -> None:
            results[f"child-{i}"] = await store.claim_resume("snap", f"d{i}", f"child-{i}")

        async with anyio.create_task_group() as tg:
            for i in range(CONCURRENCY):
                tg.start_soon(claim, i)
        _one_winner(results)

    async def test_concurrent_winning_claims_write_one_pending_row(self, store: SessionStore) -> None:
        await put(store, snap("root"))
        results: dict[str, ResumeClaim | None] = {}

        async def claim(i: int) -> None:
            pending = SessionSnapshot(
                snapshot_id=f"child-{i}", session_id="s1", parent_id="root", status="pending"
            )
            results[f"child-{i}"] = await store.claim_resume("root", f"d{i}", f"child-{i}", pending=pending)

        async with anyio.create_task_group() as tg:
            for i in range(CONCURRENCY):
                tg.start_soon(claim, i)
        _one_winner(results)
        rows = [child for child in results if await store.get_snapshot(child) is not None]
        assert rows == [child for child, res in results.items() if res is None]  # the losers wrote nothing

    async def test_concurrent_read_modify_writes_lose_nothing(self, store: SessionStore) -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(CONCURRENCY):
                tg.start_soon(store.save_snapshot, "c", _bump)
        got = await store.get_snapshot("c")
        assert got is not None and got.state is not None and got.state.custom == CONCURRENCY

    async def test_several_event_loops_share_the_store(self, store: SessionStore) -> None:
        """Threads, each on an event loop of its own (as the ``_sync`` twins run beside a
        notebook's loop), race to claim and to read-modify-write."""

        def worker(i: int) -> ResumeClaim | None:
            async def run() -> ResumeClaim | None:
                claim = await store.claim_resume("snap", f"d{i}", f"child-{i}")
                await store.save_snapshot("c", _bump)
                return claim

            return asyncio.run(run())

        def race() -> list[ResumeClaim | None]:
            with ThreadPoolExecutor(CONCURRENCY // 2) as pool:
                return list(pool.map(worker, range(CONCURRENCY)))

        claims = await anyio.to_thread.run_sync(race)
        _one_winner({f"child-{i}": claim for i, claim in enumerate(claims)})
        got = await store.get_snapshot("c")
        assert got is not None and got.state is not None and got.state.custom == CONCURRENCY
