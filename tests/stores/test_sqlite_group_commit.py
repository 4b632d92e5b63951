"""`SqliteSessionStore`'s writes on an event loop: the first of a loop pass runs at once, the
others of the pass commit together at its end (one transaction), each failing alone; a
caller cancelled while its write waits writes nothing, one cancelled after it ran stays
written; two loops (threads) on one file take turns. (Claims racing in one pass: the
conformance suite's `test_concurrent_winning_claims_write_one_pending_row`.)"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from nb_agents.stores.sqlite import SqliteSessionStore
from nb_agents.testing._store_samples import snap
from nb_agents.types import SessionSnapshot

from .test_sqlite import _commits

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the pass of an asyncio loop is what is grouped


async def test_the_writes_of_one_loop_pass_commit_together_and_fail_alone(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    store = SqliteSessionStore(path)
    await store.save_snapshot("first", lambda cur: snap("first"))
    before = _commits(path)

    def boom(cur: SessionSnapshot | None) -> SessionSnapshot:
        raise RuntimeError("boom")

    saves = [store.save_snapshot(f"w{i}", lambda cur, i=i: snap(f"w{i}", created=2 + i)) for i in range(10)]
    results = await asyncio.gather(
        *saves[:5], store.save_snapshot("bad", boom), *saves[5:], return_exceptions=True
    )
    assert isinstance(results[5], RuntimeError) and str(results[5]) == "boom"
    written = [r for i, r in enumerate(results) if i != 5]
    assert [r.snapshot_id for r in written if isinstance(r, SessionSnapshot)] == [f"w{i}" for i in range(10)]
    assert _commits(path) - before == 2  # the pass's first save alone, then the ten that followed it
    for i in range(10):
        got = await store.get_snapshot(f"w{i}")
        assert got is not None and got.to_wire() == snap(f"w{i}", created=2 + i).to_wire()
    assert await store.get_snapshot("bad") is None
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "w9"
    store.close()


async def test_a_write_cancelled_while_it_waits_for_its_pass_writes_nothing(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "agents.db")
    await store.save_snapshot("first", lambda cur: snap("first"))
    one = asyncio.ensure_future(store.save_snapshot("one", lambda cur: snap("one", created=1)))
    two = asyncio.ensure_future(store.save_snapshot("two", lambda cur: snap("two", created=2)))
    await asyncio.sleep(0)  # both ran up to their write: `one` wrote at once, `two` waits for the pass's end
    two.cancel()
    assert (await one) is not None
    with pytest.raises(asyncio.CancelledError):
        await two
    assert await store.get_snapshot("two") is None
    assert await store.get_snapshot("one") is not None
    store.close()


async def test_a_write_cancelled_after_it_ran_stays_written(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "agents.db")
    await store.save_snapshot("first", lambda cur: snap("first"))
    one = asyncio.ensure_future(store.save_snapshot("one", lambda cur: snap("one", created=1)))
    two = asyncio.ensure_future(store.save_snapshot("two", lambda cur: snap("two", created=2)))
    await asyncio.sleep(0)  # `two` waits for the pass's end, which runs next
    asyncio.get_running_loop().call_soon(two.cancel)  # after its write ran, before `two` wakes
    await one
    with pytest.raises(asyncio.CancelledError):
        await two
    got = await store.get_snapshot("two")
    assert got is not None and got.to_wire() == snap("two", created=2).to_wire()
    store.close()


async def test_two_loops_on_one_file_take_turns(tmp_path: Path) -> None:
    """A `_sync` twin runs its own loop in a thread: its passes wait for the other loop's
    writes (the file's lock), and every write of both lands."""
    path = tmp_path / "agents.db"
    store = SqliteSessionStore(path)
    await store.save_snapshot("first", lambda cur: snap("first"))

    async def writer(name: str, n: int) -> None:
        async def one(i: int) -> None:
            for k in range(n):
                sid = f"{name}-{i}-{k}"
                await store.save_snapshot(
                    sid, lambda cur, sid=sid: snap(sid, session_id=f"s-{name}", created=k)
                )

        await asyncio.gather(*(one(i) for i in range(5)))

    errors: list[BaseException] = []

    def in_thread() -> None:
        try:
            asyncio.run(writer("thread", 40))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=in_thread)
    thread.start()
    await writer("loop", 40)
    await asyncio.get_running_loop().run_in_executor(None, thread.join, 30)
    assert not thread.is_alive() and errors == []
    for name in ("thread", "loop"):
        for i in range(5):
            for k in range(40):
                assert await store.get_snapshot(f"{name}-{i}-{k}") is not None
    store.close()
