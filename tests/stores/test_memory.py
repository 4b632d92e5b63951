"""What the bounded `InMemorySessionStore` promises: memory that stays bounded over many
approval cycles, least recently used sessions evicted first, idle ones after their
ttl, evicted sessions unknown, and no eviction of a session whose turn still runs or
whose claim is unfinished."""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from datetime import UTC, datetime, timedelta

import pytest

import nb_agents as nba
from nb_agents.stores.memory import InMemorySessionStore
from nb_agents.testing._store_samples import answer, msg, put, snap
from nb_agents.types import SessionSnapshot

from .test_sqlite import _approval_agent

pytestmark = pytest.mark.anyio


def _sizes(store: InMemorySessionStore) -> dict[str, int]:
    data = store._data
    return {
        "rows": len(data.rows),
        "sessions": len(data.by_session),
        "claims": len(data.claims),
        "audit": len(data.audit_log),
        "dependents": len(data.dependents),
        "touched": len(data.touched),
        "recent": len(data.recent),
    }


@pytest.mark.slow
async def _settle_background() -> None:
    """Let the background tasks and timers of finished turns end (bounded), then collect, so the
    reading is steady. A loop of in-memory turns may never yield to the event loop (nothing in
    it waits), so the heartbeat timers of its last turns (`poll_interval` after each) are due."""
    import gc

    from nb_agents._sync import _BACKGROUND

    await asyncio.sleep(InMemorySessionStore.poll_interval * 5)
    for _ in range(200):
        if not _BACKGROUND:
            break
        await asyncio.sleep(0.01)
    gc.collect()


async def test_memory_stays_bounded_over_10000_approval_cycles() -> None:
    """Each cycle is a new session (a send that pauses, an approval that resumes it), as a
    server's clients make them: with ``max_sessions=100`` the store holds 100 sessions'
    rows, claims and audit records, however many cycles ran (unbounded: 3.5 KB per cycle)."""
    store = InMemorySessionStore(max_sessions=100)
    agent = _approval_agent(store)
    first: nba.AgentResponse | None = None
    traced: dict[int, int] = {}
    try:
        for cycle in range(1, 10_001):
            if cycle == 5_000:
                tracemalloc.start()
            res = await agent.chat().send("transfer")
            res = await agent.chat(snapshot_id=res.snapshot_id).resume(restart=[res.interrupts[0].approve()])
            assert res.text == "done"
            first = first or res
            if cycle % 1_000 == 0:
                sizes = _sizes(store)
                assert sizes["sessions"] == sizes["touched"] == sizes["audit"] == sizes["claims"] == 100, (
                    sizes
                )
                assert sizes["rows"] == 200 and sizes["dependents"] <= 100 and sizes["recent"] <= 256, sizes
            if cycle in (6_000, 10_000):
                await _settle_background()  # heartbeats of finished turns end on their own, a moment later
                traced[cycle] = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    growth = traced[10_000] - traced[6_000]
    print(f"\nbounded memory store: {growth / 1024:.1f} KiB traced growth over cycles 6,000-10,000")
    assert growth < 400 * 1024  # unbounded, these 4,000 cycles would hold about 14 MB more
    assert first is not None and first.session_id is not None and first.snapshot_id is not None
    assert await store.get_snapshot(first.snapshot_id) is None  # evicted: unknown
    assert await store.get_latest(first.session_id) is None
    assert await store.audit(first.session_id) == []
    assert first.session_id not in await store.session_ids()
    assert len(await store.session_ids()) == 100
    with pytest.raises(nba.AgentError, match="NOT_FOUND: Snapshot .* not found"):
        await agent.chat(snapshot_id=first.snapshot_id).send("again")


async def test_the_least_recently_used_session_goes_first() -> None:
    store = InMemorySessionStore(max_sessions=2)
    await put(store, snap("a1", session_id="a"))
    assert await store.claim_resume("a1", "d", "a2") is None
    done = snap("a2", session_id="a", parent_id="a1", created=1)
    await store.save_snapshot("a2", lambda cur: done, audit=[answer(1, session_id="a", snapshot_id="a1")])
    await put(store, snap("b1", session_id="b"))
    assert await store.get_snapshot("a1") is not None  # a is now the most recent
    await put(store, snap("c1", session_id="c"))
    assert await store.session_ids() == ["a", "c"]
    assert await store.get_snapshot("b1") is None
    await put(store, snap("d1", session_id="d"))  # a goes, with its claim and audit
    assert await store.session_ids() == ["c", "d"]
    assert await store.audit("a") == [] and await store.get_latest("a") is None
    assert await store.claim_resume("a1", "d2", "a3") is None  # the old claim went with its session
    assert store._data.claims.keys() == {"a1"}


async def test_idle_sessions_go_after_their_ttl() -> None:
    store = InMemorySessionStore(ttl=timedelta(milliseconds=200))
    await put(store, snap("a1", session_id="a"))
    await put(store, snap("b1", session_id="b"))
    time.sleep(0.1)
    assert await store.get_latest("b") is not None  # touched: b's ttl starts again
    time.sleep(0.15)
    assert await store.session_ids() == ["b"]  # a was idle for 250 ms: gone on this access
    time.sleep(0.25)
    assert await store.get_snapshot("b1") is None and await store.session_ids() == []


async def test_a_session_whose_turn_runs_or_whose_claim_is_unfinished_is_kept() -> None:
    store = InMemorySessionStore(max_sessions=1, ttl=0.05)
    now = datetime.now(UTC)
    beat = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    running = SessionSnapshot(snapshot_id="r1", session_id="running", status="pending", heartbeat_at=beat)
    await put(store, running)
    await put(store, snap("c1", session_id="claimed"))
    assert await store.claim_resume("c1", "d", "c2") is None  # a claim whose child never wrote
    await put(store, snap("p1", session_id="paused"))
    child = SessionSnapshot(
        snapshot_id="p2", session_id="paused", parent_id="p1", status="pending", heartbeat_at=beat
    )
    assert await store.claim_resume("p1", "d", "p2", pending=child) is None
    time.sleep(0.1)
    await put(store, snap("x1", session_id="idle"))  # over the bound, and the others are past their ttl
    assert await store.session_ids() == ["running", "claimed", "paused", "idle"]
    # once the turns settle (or their workers die), their sessions can go
    await store.save_snapshot("p2", lambda cur: snap("p2", session_id="paused", parent_id="p1", created=2))
    stale = (now - timedelta(minutes=5)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    await store.save_snapshot("r1", lambda cur: running.model_copy(update={"heartbeat_at": stale}))
    time.sleep(0.1)
    await put(store, snap("y1", session_id="last"))
    assert await store.session_ids() == ["claimed", "last"]  # c2 never appeared: its claim is unfinished


async def test_a_row_built_on_an_evicted_session_keeps_its_history() -> None:
    """A fork into another session that delta-encodes against its parent keeps every message."""
    store = InMemorySessionStore(max_sessions=1)
    history = [msg("user", "one"), msg("model", "two")]
    await put(store, snap("root", session_id="a", messages=history))
    fork = snap(
        "fork", session_id="b", parent_id="root", created=1, messages=[*history, msg("user", "three")]
    )
    await put(store, fork)  # session a is evicted now
    assert await store.session_ids() == ["b"] and await store.get_snapshot("root") is None
    got = await store.get_snapshot("fork")
    assert got is not None and got.to_wire() == fork.to_wire()
    store._data.recent.clear()
    store._data.cache.clear()  # decoded from the row itself
    got = await store.get_snapshot("fork")
    assert got is not None and got.to_wire() == fork.to_wire()


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        InMemorySessionStore(max_sessions=0)
    with pytest.raises(ValueError, match="ttl"):
        InMemorySessionStore(ttl=0)
    with pytest.raises(ValueError, match="heartbeat_timeout"):
        InMemorySessionStore(heartbeat_timeout=-1)
    store = InMemorySessionStore(max_sessions=5, ttl=60)
    assert repr(store) == "InMemorySessionStore(max_sessions=5, ttl=datetime.timedelta(seconds=60))"
    assert store.heartbeat_timeout == timedelta(seconds=60) and store.heartbeat_interval == timedelta(
        seconds=30
    )
