"""`SqliteSessionStore`'s writes on an event loop: the first of a loop pass runs at once, the
others of the pass commit together at its end (one transaction), each failing alone; a
caller cancelled while its write waits writes nothing, one cancelled after it ran stays
written; two loops (threads) on one file take turns; a child forked while a thread held
the file's lock writes all the same. (Claims racing in one pass: the
conformance suite's `test_concurrent_winning_claims_write_one_pending_row`.)"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path

import anyio
import pytest

from nb_agents.stores.sqlite import SqliteSessionStore
from nb_agents.testing._store_samples import snap
from nb_agents.types import SessionSnapshot

from .test_sqlite import _commits, check_ten_saved_and_the_failing_one_alone, ten_saves_and_a_failing_one

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the pass of an asyncio loop is what is grouped


async def test_the_writes_of_one_loop_pass_commit_together_and_fail_alone(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    store = SqliteSessionStore(path)
    await store.save_snapshot("first", lambda cur: snap("first"))
    before = _commits(path)
    results = await ten_saves_and_a_failing_one(store)
    assert _commits(path) - before == 2  # the pass's first save alone, then the ten that followed it
    await check_ten_saved_and_the_failing_one_alone(store, results)
    store.close()


@pytest.mark.parametrize("ran", [False, True], ids=["while-it-waits", "after-it-ran"])
async def test_a_write_cancelled_while_it_waits_writes_nothing_and_after_it_ran_stays(
    tmp_path: Path, ran: bool
) -> None:
    store = SqliteSessionStore(tmp_path / "agents.db")
    await store.save_snapshot("first", lambda cur: snap("first"))
    one = asyncio.ensure_future(store.save_snapshot("one", lambda cur: snap("one", created=1)))
    two = asyncio.ensure_future(store.save_snapshot("two", lambda cur: snap("two", created=2)))
    await asyncio.sleep(0)  # both ran up to their write: `one` wrote at once, `two` waits for the pass's end
    if ran:
        asyncio.get_running_loop().call_soon(
            two.cancel
        )  # the pass ends first: its write runs, then the cancel
    else:
        two.cancel()
    assert (await one) is not None
    with pytest.raises(asyncio.CancelledError):
        await two
    got = await store.get_snapshot("two")
    if ran:
        assert got is not None and got.to_wire() == snap("two", created=2).to_wire()
    else:
        assert got is None
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


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
async def test_a_child_forked_while_a_thread_holds_the_files_lock_still_writes(tmp_path: Path) -> None:
    """The file's lock is held by a worker thread's batch for a whole commit: a child forked
    then (a kernel's multiprocessing, a server's fork) has no such thread, and its writes
    must not wait for it (nor for a pool lock, the waiters' lock or a checkpoint of the parent's)."""
    store = SqliteSessionStore(tmp_path / "agents.db")
    await store.save_snapshot("first", lambda cur: snap("first"))
    files = store._writes_of_file
    held, let_go = threading.Event(), threading.Event()

    # someone waits for a row (a save then wakes waiters, under the changes' lock)
    stop_watching = store.on_change("child", lambda: None)

    def hold() -> None:
        # the file's lock as `_drain` holds it while a batch commits, the pool's as a call
        # that takes a connection, the changes' as a save that wakes waiters, a checkpoint
        with files._lock, store._pool_lock, store._changes._lock:
            store._checkpointing = True
            held.set()
            let_go.wait(30)
        store._checkpointing = False

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: the lock's holder is not here
        code = 1
        try:
            signal.alarm(15)  # a hang is a failure, not a stuck suite
            asyncio.run(store.save_snapshot("child", lambda cur: snap("child", created=1)))
            code = 0 if not store._checkpointing else 3  # the parent's checkpoint is not the child's
        finally:
            os._exit(code)
    try:
        _, status = await asyncio.get_running_loop().run_in_executor(None, os.waitpid, pid, 0)
    finally:
        let_go.set()
        holder.join(10)
    assert os.waitstatus_to_exitcode(status) == 0  # -SIGALRM: it waited for a thread it does not have
    assert await store.get_snapshot("child") is not None  # the child's write is in the file
    await store.save_snapshot("after", lambda cur: snap("after", created=2))  # the parent's lock works on
    stop_watching()
    store.close()


class Halt(BaseException):
    """Not an `Exception`: as a ``KeyboardInterrupt`` raised inside a mutator, or a caller's own."""


@pytest.mark.parametrize("where", ["loop", "threads"])
async def test_a_write_that_raises_a_base_exception_fails_alone_and_leaves_no_caller_waiting(
    tmp_path: Path, where: str
) -> None:
    """A batch's write that raises what is not an `Exception` (an interrupt) is that write's
    outcome, as any failure: the others commit, and every caller hears back."""
    path = tmp_path / "agents.db"
    store = SqliteSessionStore(path, synchronous="full" if where == "threads" else "normal")
    await store.save_snapshot("first", lambda cur: snap("first"))
    go = threading.Event()
    if where == "threads":  # the writes queue behind a batch that holds the file's lock
        holding = threading.Event()

        def slow(cur: SessionSnapshot | None) -> SessionSnapshot:
            holding.set()
            go.wait(10)
            return snap("slow", created=1)

        first = asyncio.ensure_future(store.save_snapshot("slow", slow))
        assert await anyio.to_thread.run_sync(holding.wait, 10)
    gathered = ten_saves_and_a_failing_one(store, Halt)
    if where == "threads":
        for _ in range(3):
            await asyncio.sleep(0)
        go.set()
        assert (await first) is not None
    results = await asyncio.wait_for(gathered, 10)  # before: the callers batched with it waited forever
    await check_ten_saved_and_the_failing_one_alone(store, results, Halt)
    store.close()
