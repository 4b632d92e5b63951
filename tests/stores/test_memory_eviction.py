"""A bounded `InMemorySessionStore` never drops a session waiting for an answer silently.

A session evicted while its turn waited for an answer (a pause nobody claimed) is
logged, and reading or answering it later raises ``NOT_FOUND`` saying it was
evicted and why. Before, it read as unknown: the answer got "Snapshot ... not
found." and a message to the session started a new, empty one with that id.
Sessions that wait for nothing still go silently, and what the store remembers
of evictions is bounded.
"""

from __future__ import annotations

import logging
import time

import pytest

import nb_agents as nba
from nb_agents.errors import NotFoundError
from nb_agents.stores.memory import InMemorySessionStore
from nb_agents.testing._store_samples import put, snap

from .test_sqlite import _approval_agent

pytestmark = pytest.mark.anyio


def paused(snapshot_id: str, session_id: str) -> nba.SessionSnapshot:
    return snap(snapshot_id, session_id=session_id).model_copy(update={"finish_reason": "interrupted"})


async def test_a_waiting_session_evicted_over_max_sessions_is_logged_and_refused_by_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = InMemorySessionStore(max_sessions=2)
    agent = _approval_agent(store)
    waiting = await agent.chat().send("transfer")
    assert waiting.finish_reason == "interrupted"
    done = await agent.chat().send("transfer")
    await agent.chat(snapshot_id=done.snapshot_id).resume(restart=[done.interrupts[0].approve()])
    with caplog.at_level(logging.WARNING, logger="nb_agents.stores"):
        await agent.chat().send("transfer")  # a third session: the least recently used, waiting, goes
    [line] = [r.getMessage() for r in caplog.records if r.name == "nb_agents.stores"]
    assert f"evicted session {waiting.session_id} while it waited for an answer" in line
    assert "over max_sessions=2" in line
    assert waiting.session_id not in await store.session_ids()
    # the answer, the session and its snapshot: NOT_FOUND, saying what happened
    with pytest.raises(NotFoundError, match=f"Snapshot {waiting.snapshot_id} was evicted .* while it waited"):
        await agent.chat(snapshot_id=waiting.snapshot_id).resume(restart=[waiting.interrupts[0].approve()])
    with pytest.raises(NotFoundError, match="over max_sessions=2"):
        await agent.get_snapshot(session_id=waiting.session_id)
    with pytest.raises(NotFoundError, match=f"Session {waiting.session_id} was evicted"):
        await agent.chat(session_id=waiting.session_id).send("are you there?")  # not a new empty session


async def test_a_waiting_session_past_its_ttl_says_so_and_a_settled_one_goes_silently(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = InMemorySessionStore(ttl=0.05)
    await put(store, paused("w1", "waiting"))
    await put(store, snap("d1", session_id="done"))
    time.sleep(0.1)
    with caplog.at_level(logging.WARNING, logger="nb_agents.stores"):
        with pytest.raises(NotFoundError, match=r"Snapshot w1 was evicted .*\(unused for 0.05 s, its ttl\)"):
            await store.get_snapshot("w1")
    assert [r.getMessage()[:37] for r in caplog.records] == ["evicted session waiting while it wait"]
    assert await store.get_snapshot("d1") is None and await store.get_latest("done") is None


async def test_an_answered_or_branched_pause_is_not_waiting() -> None:
    store = InMemorySessionStore(max_sessions=1)
    await put(store, paused("a1", "answered"))
    assert await store.claim_resume("a1", "digest", "a2") is None  # answered: its turn ran
    await put(store, snap("a2", session_id="answered", parent_id="a1", created=1))
    await put(store, paused("b1", "branched"))
    await put(store, snap("b2", session_id="branched", parent_id="b1", created=1))  # a message instead
    await put(store, snap("c1", session_id="last"))
    assert await store.get_snapshot("a1") is None and await store.get_latest("answered") is None
    assert await store.get_snapshot("b1") is None and await store.get_latest("branched") is None


async def test_what_the_store_remembers_of_evictions_is_bounded() -> None:
    from nb_agents.stores import _memory_evict

    store = InMemorySessionStore(max_sessions=1)
    count = _memory_evict.REMEMBERED // 2 + 1  # each eviction remembers a session and its pause
    for i in range(count + 1):
        await put(store, paused(f"p{i}", f"s{i}"))
    assert len(store._data.evicted._said) == _memory_evict.REMEMBERED
    assert await store.get_snapshot("p0") is None  # the oldest was forgotten: plain unknown now
    with pytest.raises(NotFoundError, match="Snapshot p1 was evicted"):
        await store.get_snapshot("p1")


async def test_bounds_set_later_count_the_sessions_already_held() -> None:
    store = InMemorySessionStore()
    for i in range(3):
        await put(store, snap(f"x{i}", session_id=f"s{i}"))
    store.bound(max_sessions=2, ttl=None)
    assert (store.max_sessions, store.ttl) == (2, None)
    await put(store, snap("y", session_id="new"))
    assert len(await store.session_ids()) == 2
    with pytest.raises(ValueError, match="max_sessions"):
        store.bound(max_sessions=0, ttl=None)
