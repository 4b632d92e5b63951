"""The checks of the store conformance suite: claim generations, fenced saves, heartbeat
timeouts, and waiting for a row to change (`FenceChecks`).

Imported through `.stores`, which registers it for pytest's assertion rewriting first.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from ..errors import StaleClaimError
from ..stores.base import Fence, ResumeClaim, SessionStore, SnapshotMutator
from ..types import SessionSnapshot, SessionState
from ._store_samples import answer, close_store, put, snap

__all__ = ["FenceChecks"]

CONCURRENCY = 12
PATIENCE = 10.0  # seconds a check waits for what should take milliseconds, before it fails


def _pending(snapshot_id: str, *, status: str = "pending", beat: datetime | None = None) -> SessionSnapshot:
    at = (beat or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return SessionSnapshot(
        snapshot_id=snapshot_id,
        session_id="s1",
        parent_id="root",
        heartbeat_at=at,
        status=status,  # type: ignore[arg-type]
    )


def _append(tag: str) -> SnapshotMutator:
    """A read-modify-write that appends `tag` to the row's custom list."""

    def mutate(cur: SessionSnapshot | None) -> SessionSnapshot:
        tags = list(cur.state.custom) if cur is not None and cur.state is not None else []
        return SessionSnapshot(snapshot_id="kid", session_id="s1", state=SessionState(custom=[*tags, tag]))

    return mutate


class FenceChecks:
    """The checks of claim generations, fences, heartbeats and `wait_changed` (a mixin of
    `StoreConformance`, which has the fixtures and the optional store factory)."""

    def make_store_with_heartbeat_timeout(
        self, tmp_path: Path, timeout: timedelta
    ) -> SessionStore | Awaitable[SessionStore]:
        """A new, empty store whose pending rows expire after `timeout` (or a coroutine that
        makes one); define it to run `test_the_heartbeat_timeout_is_the_stores`."""
        raise NotImplementedError

    # -- generations ----------------------------------------------------------------------
    async def test_replacements_make_the_next_generation(self, store: SessionStore) -> None:
        assert await store.claim_resume("snap", "d1", "child-1") is None
        first = await store.claim_resume("snap", "d1", "again")
        assert first == ResumeClaim("d1", "child-1", 1) and first.generation == 1
        assert await store.replace_claim("snap", first, "d2", "child-2") is None
        second = ResumeClaim("d2", "child-2", 2)
        assert await store.claim_resume("snap", "d9", "late") == second
        # the same child may go on under a new generation (a retry); the digest is not compared
        assert await store.replace_claim("snap", ResumeClaim("other", "child-2", 2), "d2", "child-2") is None
        assert await store.claim_resume("snap", "d9", "late") == ResumeClaim("d2", "child-2", 3)
        # with no claim at all (released, or never made), a replacement wins too
        await store.release_claim("snap", "child-2")
        assert await store.replace_claim("snap", ResumeClaim("d2", "child-2", 3), "d4", "child-4") is None
        assert await store.claim_resume("snap", "d9", "late") == ResumeClaim("d4", "child-4", 4)
        assert await store.replace_claim("fresh", ResumeClaim("x", "y", 1), "d5", "child-5") is None
        assert await store.claim_resume("fresh", "d9", "late") == ResumeClaim("d5", "child-5", 2)

    async def test_a_stale_replacement_loses_and_writes_nothing(self, store: SessionStore) -> None:
        await put(store, snap("root"))
        assert await store.claim_resume("root", "d1", "kid-1", pending=_pending("kid-1")) is None
        first = ResumeClaim("d1", "kid-1", 1)
        assert await store.replace_claim("root", first, "d2", "kid-2", pending=_pending("kid-2")) is None
        got = await store.get_snapshot("kid-2")
        assert got is not None and got.status == "pending"  # the winner's pending row
        # `expected` is stale (another worker replaced it first): the current claim comes back
        lost = await store.replace_claim("root", first, "d3", "kid-3", pending=_pending("kid-3"))
        assert lost == ResumeClaim("d2", "kid-2", 2)
        assert await store.get_snapshot("kid-3") is None
        assert await store.claim_resume("root", "d9", "late") == ResumeClaim("d2", "kid-2", 2)
        # a winning replacement keeps a child row that exists
        await put(store, snap("kid-4", parent_id="root", created=4))
        assert await store.replace_claim("root", lost, "d4", "kid-4", pending=_pending("kid-4")) is None
        kept = await store.get_snapshot("kid-4")
        assert kept is not None and kept.to_wire() == snap("kid-4", parent_id="root", created=4).to_wire()

    async def test_concurrent_replacements_have_one_winner(self, store: SessionStore) -> None:
        await put(store, snap("root"))
        assert await store.claim_resume("root", "d", "kid") is None
        expected = ResumeClaim("d", "kid", 1)
        results: dict[str, ResumeClaim | None] = {}

        async def replace(i: int) -> None:
            pending = _pending(f"kid-{i}")
            results[f"kid-{i}"] = await store.replace_claim(
                "root", expected, f"d{i}", f"kid-{i}", pending=pending
            )

        async with anyio.create_task_group() as tg:
            for i in range(CONCURRENCY):
                tg.start_soon(replace, i)
        winners = [child for child, res in results.items() if res is None]
        assert len(winners) == 1, f"replacements that won: {winners}"
        won = ResumeClaim(f"d{winners[0].split('-')[1]}", winners[0], 2)
        assert {res for res in results.values() if res is not None} == {won}
        rows = [child for child in results if await store.get_snapshot(child) is not None]
        assert rows == winners  # the losers wrote nothing

    # -- fences -------------------------------------------------------------------------
    async def test_a_fenced_save_after_a_replacement_is_refused(self, store: SessionStore) -> None:
        await put(store, snap("root"))
        assert await store.claim_resume("root", "d1", "kid") is None
        old = Fence("root", "kid", 1)
        written = await store.save_snapshot("kid", _append("first"), audit=[answer(1)], fence=old)
        assert written is not None and written.state is not None and written.state.custom == ["first"]
        assert await store.replace_claim("root", ResumeClaim("d1", "kid", 1), "d1", "kid") is None
        ran: list[object] = []

        def stale(cur: SessionSnapshot | None) -> SessionSnapshot | None:
            ran.append(cur)
            return _append("stale")(cur)

        with pytest.raises(StaleClaimError) as caught:
            await store.save_snapshot("kid", stale, audit=[answer(2)], fence=old)
        assert caught.value.status == "FAILED_PRECONDITION"
        assert "generation 1" in caught.value.message and "generation 2" in caught.value.message
        assert ran == []  # the mutator never ran
        got = await store.get_snapshot("kid")
        assert got is not None and got.state is not None and got.state.custom == ["first"]
        assert await store.audit("s1") == [answer(1)]  # neither the row nor the audit
        # the new generation's fence holds; a save without a fence is not checked
        await store.save_snapshot("kid", _append("second"), audit=[answer(3)], fence=Fence("root", "kid", 2))
        await store.save_snapshot("kid", _append("unfenced"))
        got = await store.get_snapshot("kid")
        assert (
            got is not None and got.state is not None and got.state.custom == ["first", "second", "unfenced"]
        )
        assert await store.audit("s1") == [answer(1), answer(3)]

    async def test_a_fence_needs_the_claim_it_names(self, store: SessionStore) -> None:
        with pytest.raises(StaleClaimError):  # never claimed
            await store.save_snapshot("kid", _append("x"), fence=Fence("root", "kid", 1))
        assert await store.claim_resume("root", "d1", "kid") is None
        with pytest.raises(StaleClaimError):  # another child's claim
            await store.save_snapshot("other", _append("x"), fence=Fence("root", "other", 1))
        with pytest.raises(StaleClaimError):  # another generation
            await store.save_snapshot("kid", _append("x"), fence=Fence("root", "kid", 2))
        await store.release_claim("root", "kid")
        with pytest.raises(StaleClaimError):  # released
            await store.save_snapshot("kid", _append("x"), fence=Fence("root", "kid", 1))
        assert await store.get_snapshot("kid") is None and await store.get_snapshot("other") is None

    async def test_fenced_saves_racing_a_replacement_are_atomic(self, store: SessionStore) -> None:
        """Each fenced save either wrote (before the replacement) or was refused: none is lost,
        none half-written, and none of the old generation writes once the replacement returned."""
        assert await store.claim_resume("root", "d1", "kid") is None
        old = Fence("root", "kid", 1)
        outcomes: dict[str, bool] = {}

        async def save(i: int) -> None:
            try:
                await store.save_snapshot("kid", _append(f"s{i}"), fence=old)
                outcomes[f"s{i}"] = True
            except StaleClaimError:
                outcomes[f"s{i}"] = False

        async def replace() -> None:
            await anyio.sleep(0)
            assert await store.replace_claim("root", ResumeClaim("d1", "kid", 1), "d2", "kid-2") is None

        async with anyio.create_task_group() as tg:
            for i in range(CONCURRENCY):
                tg.start_soon(save, i)
            tg.start_soon(replace)
        got = await store.get_snapshot("kid")
        stored = list(got.state.custom) if got is not None and got.state is not None else []
        assert sorted(stored) == sorted(tag for tag, ok in outcomes.items() if ok)
        with pytest.raises(StaleClaimError):
            await store.save_snapshot("kid", _append("after"), fence=old)

    # -- heartbeats ---------------------------------------------------------------------
    async def test_heartbeat_timeout_and_interval(self, store: SessionStore) -> None:
        assert isinstance(store.heartbeat_timeout, timedelta) and store.heartbeat_timeout > timedelta(0)
        assert store.heartbeat_interval == store.heartbeat_timeout / 2

    async def test_the_heartbeat_timeout_is_the_stores(self, tmp_path: Path) -> None:
        """A store with a short timeout reads a heartbeat as expired that a long one reads as pending."""
        made: list[SessionStore] = []
        try:
            for name, seconds in (("short", 5), ("long", 120)):
                (tmp_path / name).mkdir()
                try:
                    new = self.make_store_with_heartbeat_timeout(tmp_path / name, timedelta(seconds=seconds))
                except NotImplementedError:
                    pytest.skip("define make_store_with_heartbeat_timeout(tmp_path, timeout) to check it")
                made.append(await new if inspect.isawaitable(new) else new)
            short, long = made
            assert short.heartbeat_timeout == timedelta(seconds=5) and long.heartbeat_timeout == timedelta(
                minutes=2
            )
            assert short.heartbeat_interval == timedelta(seconds=2.5)
            beat = datetime.now(UTC) - timedelta(seconds=30)
            for each in made:
                await put(each, _pending("p", beat=beat))
            got_short, got_long = await short.get_snapshot("p"), await long.get_snapshot("p")
            assert got_short is not None and got_short.status == "expired"
            assert got_long is not None and got_long.status == "pending"
        finally:
            for each in made:
                await close_store(each)

    # -- waiting for a change -------------------------------------------------------------
    async def test_wait_changed_returns_by_its_timeout(self, store: SessionStore) -> None:
        await put(store, _pending("p"))
        with anyio.fail_after(PATIENCE):
            await store.wait_changed("p", 0.05)
            await store.wait_changed("never-saved", 0.05)
            await store.wait_changed("p", 0)

    async def test_a_save_wakes_a_waiter(self, store: SessionStore) -> None:
        await put(store, _pending("p"))
        waiter = asyncio.ensure_future(store.wait_changed("p", 60))
        await self._save_until_done(store, waiter)

    async def test_a_save_wakes_a_waiter_on_another_event_loop(self, store: SessionStore) -> None:
        """A waiter on a thread's own event loop (as the ``_sync`` twins run) wakes on a save from here."""
        await put(store, _pending("p"))
        done = threading.Event()

        def wait() -> None:
            asyncio.run(store.wait_changed("p", 60))
            done.set()

        thread = threading.Thread(target=wait, daemon=True)
        thread.start()
        with anyio.fail_after(PATIENCE):
            while not done.is_set():
                await store.save_snapshot("p", lambda cur: _pending("p"))
                await anyio.sleep(0.05)
        await anyio.to_thread.run_sync(thread.join)

    async def test_wait_changed_returns_at_once_for_a_settled_row(self, store: SessionStore) -> None:
        """A change that landed before the call is not waited past: a row no longer pending returns it."""
        for status in ("aborting", "aborted", "completed", "failed"):
            await put(store, _pending(f"row-{status}", status=status))
            with anyio.fail_after(PATIENCE):
                await store.wait_changed(f"row-{status}", 60)

    @staticmethod
    async def _save_until_done(store: SessionStore, waiter: asyncio.Future[None]) -> None:
        """Rewrite the row until `waiter` returns (a waiter may register after the first save)."""
        try:
            with anyio.fail_after(PATIENCE):
                while not waiter.done():
                    await store.save_snapshot("p", lambda cur: _pending("p"))
                    await asyncio.wait([waiter], timeout=0.05)
            await waiter
        finally:
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiter
