"""`PostgresSessionStore.wait_changed` on a real server: a save from another process
wakes a waiter (LISTEN/NOTIFY), a dropped listening connection is replaced, an id too
long for a payload still wakes its waiters, only an abort of a pending row's run
notifies, and a waiting turn runs almost no statements."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

import anyio
import pg
import pytest

from nb_agents.types import SessionSnapshot

if not pg.in_ci():
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[postgres]')")
import psycopg  # noqa: E402

from nb_agents.stores._pg_rows import PgRows  # noqa: E402
from nb_agents.stores.postgres import PostgresSessionStore  # noqa: E402

pytestmark = pytest.mark.anyio

T = TypeVar("T")
P = ParamSpec("P")
PATIENCE = 10.0  # seconds for what takes milliseconds; every wait below has a timeout of 60


def _row(snapshot_id: str, status: str = "pending") -> SessionSnapshot:
    beat = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return SessionSnapshot(snapshot_id=snapshot_id, session_id="s1", status=status, heartbeat_at=beat)  # type: ignore[arg-type]


async def _listening(store: PostgresSessionStore) -> None:
    """Until the store listens (once it does, it wakes every waiter: they may have missed a change)."""
    store._listener.start()
    with anyio.fail_after(PATIENCE):
        while not store._listener.listening.is_set():
            await anyio.sleep(0.01)


async def _until_waiting(store: PostgresSessionStore, waiters: int = 1) -> None:
    """Until the store has `waiters` waiters registered."""
    with anyio.fail_after(PATIENCE):
        while store._changes.waiting() != waiters:
            await anyio.sleep(0.01)


def _waiter(dsn: str, ready: Any, out: Any) -> None:
    """In another process: wait for row "p" (60 s timeout); report how the row read on waking."""

    async def run() -> tuple[float, str | None]:
        async with PostgresSessionStore(dsn) as store:
            await _listening(store)
            waiting = asyncio.ensure_future(store.wait_changed("p", 60))
            await _until_waiting(store)
            ready.put("waiting")
            t0 = time.monotonic()
            await waiting
            woke = time.monotonic() - t0
            got = await store.get_snapshot("p")
            return woke, got.status if got is not None else None

    out.put(asyncio.run(run()))


async def test_a_save_from_another_process_wakes_a_waiter(dsn: str) -> None:
    async with PostgresSessionStore(dsn) as store:
        await store.save_snapshot("p", lambda cur: _row("p"))
        ctx = multiprocessing.get_context("spawn")
        ready, out = ctx.Queue(), ctx.Queue()
        proc = ctx.Process(target=_waiter, args=(dsn, ready, out))
        proc.start()
        try:
            assert await anyio.to_thread.run_sync(lambda: ready.get(timeout=60)) == "waiting"
            await store.save_snapshot("p", lambda cur: _row("p", "aborting"))  # an abort, written here
            woke, status = await anyio.to_thread.run_sync(lambda: out.get(timeout=60))
        finally:
            await anyio.to_thread.run_sync(proc.join, 60)
        assert proc.exitcode == 0
        print(f"\nwoken in the other process {woke * 1000:.1f} ms after the save")
        assert woke < PATIENCE and status == "aborting"  # the timeout was 60 s


async def test_a_dropped_listening_connection_is_replaced(dsn: str, pg_server: pg.PgServer) -> None:
    async with PostgresSessionStore(dsn) as store, PostgresSessionStore(dsn) as other:
        await store.save_snapshot("p", lambda cur: _row("p"))
        await _listening(store)
        waiting = asyncio.ensure_future(store.wait_changed("p", 60))
        await _until_waiting(store)
        with psycopg.connect(pg_server.dsn("postgres"), autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'"
            ).fetchall()
        assert killed == [(True,)]
        with anyio.fail_after(PATIENCE):
            await waiting  # listening again, it wakes every waiter: it may have missed their rows
        await _listening(store)
        waiting = asyncio.ensure_future(store.wait_changed("p", 60))
        await _until_waiting(store)
        await other.save_snapshot("p", lambda cur: _row("p", "aborting"))  # another store: by NOTIFY only
        with anyio.fail_after(PATIENCE):
            await waiting


async def test_an_id_too_long_for_a_payload_wakes_its_waiters(dsn: str) -> None:
    long_id = "😀" * 3000  # 12,000 bytes: NOTIFY payloads hold 8,000
    async with PostgresSessionStore(dsn) as store, PostgresSessionStore(dsn) as other:
        await store.save_snapshot(long_id, lambda cur: _row(long_id))
        await _listening(store)
        waiting = asyncio.ensure_future(store.wait_changed(long_id, 60))
        await _until_waiting(store)
        await other.save_snapshot(long_id, lambda cur: _row(long_id, "aborting"))
        with anyio.fail_after(PATIENCE):
            await waiting


async def test_only_an_abort_notifies(dsn: str) -> None:
    """A heartbeat (pending over pending), a new row and a turn's own final write (pending to
    completed) wake nobody in another store; the abort does.

    A notifying transaction takes a server-wide lock at commit, which costs most on
    a loaded machine (20 ms of COMMIT a cycle at 50 concurrent cycles, under 1 ms without),
    and every listening process reads each notice in a transaction of its own."""
    async with PostgresSessionStore(dsn) as store, PostgresSessionStore(dsn) as other:
        await store.save_snapshot("p", lambda cur: _row("p"))
        await store.save_snapshot("q", lambda cur: _row("q"))
        await _listening(store)
        waiting = asyncio.ensure_future(store.wait_changed("p", 60))
        finished = asyncio.ensure_future(store.wait_changed("q", 60))
        await _until_waiting(store, 2)
        for beat in range(5):
            await other.save_snapshot("p", lambda cur: _row("p"))
            await other.save_snapshot(f"new-{beat}", lambda cur: _row(f"new-{beat}"))
        await other.save_snapshot("q", lambda cur: _row("q", "completed"))
        await asyncio.wait([waiting, finished], timeout=0.5)
        assert not waiting.done() and not finished.done()
        finished.cancel()
        await other.save_snapshot("p", lambda cur: _row("p", "aborted"))
        with anyio.fail_after(PATIENCE):
            await waiting


class _CountingStore(PostgresSessionStore):
    """Counts its transactions."""

    transactions = 0

    def _transaction(
        self, write: bool, fn: Callable[Concatenate[PgRows, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        self.transactions += 1
        return super()._transaction(write, fn, *args, **kwargs)


async def test_a_waiting_turn_runs_almost_no_statements(dsn: str) -> None:
    """Waiting 1.5 s for an abort costs one read (the check that nothing settled the row
    before the wait began), where polling every 0.1 s cost 15."""
    async with _CountingStore(dsn) as store:
        await store.save_snapshot("p", lambda cur: _row("p"))
        await _listening(store)
        store.transactions = 0
        t0 = time.monotonic()
        await store.wait_changed("p", 1.5)
        assert time.monotonic() - t0 > 1.0  # nothing woke it: it waited
        assert store.transactions == 1
