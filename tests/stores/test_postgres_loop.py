"""`PostgresSessionStore`'s one-statement writes on the caller's event loop (`stores._pg_aio`).

An approval cycle's three writes, and a read of a row, run on async connections of the running loop, not in
worker threads. What that must not change, on a real PostgreSQL server: a caller cancelled
while its write runs gets `CancelledError` at once and the write still runs to its end; a
connection the server dropped is not handed to a write; a loop uses at most ``pool_size``
connections at once; a forked child leaves the parent's connections alone; a store dropped
without ``close`` closes them.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import threading
import weakref

import anyio
import pg
import pytest

from nb_agents.stores.base import ResumeClaim
from nb_agents.testing._store_samples import msg, put, snap

if not pg.in_ci():  # under CI a missing psycopg is an error, not a skip
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[postgres]')")
import psycopg  # noqa: E402

from nb_agents.stores._base import SLOW  # noqa: E402
from nb_agents.stores._delta import MessageCache  # noqa: E402
from nb_agents.stores._pg_aio import LoopConnections  # noqa: E402
from nb_agents.stores._pg_fast import Fast, RecentRows  # noqa: E402
from nb_agents.stores._pg_rows import BY_ID, CHAIN  # noqa: E402
from nb_agents.stores.postgres import PostgresSessionStore  # noqa: E402

pytestmark = pytest.mark.anyio


def _dbname(dsn: str) -> str:
    return dsn.split("dbname=")[1].split()[0]


async def _until_waiting_on_a_lock(admin: psycopg.Connection, dbname: str) -> None:
    for _ in range(200):
        waiting = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'", (dbname,)
        ).fetchone()
        if waiting and waiting[0]:
            return
        await asyncio.sleep(0.025)
    raise AssertionError("the claim never waited on the other transaction's lock")


async def test_a_write_cancelled_while_it_runs_runs_to_its_end(dsn: str, pg_server: pg.PgServer) -> None:
    async with PostgresSessionStore(dsn) as store:
        await put(store, snap("p"))
        with (
            psycopg.connect(pg_server.dsn("postgres"), autocommit=True) as admin,
            psycopg.connect(dsn) as other,
        ):
            # another transaction's claim of the same row, not committed: ours waits for it to end
            other.execute(
                "INSERT INTO nb_agents_claims (snapshot_id, digest, child_id) VALUES ('p', 'x', 'c0')"
            )
            claiming = asyncio.ensure_future(store.claim_resume("p", "ours", "c1"))
            await _until_waiting_on_a_lock(admin, _dbname(dsn))
            claiming.cancel()
            with pytest.raises(asyncio.CancelledError):
                await claiming  # back while the statement still waits: the lock is still held
            other.rollback()  # their claim never was: the statement goes on, and ours goes in
        for _ in range(200):
            with psycopg.connect(dsn, autocommit=True) as conn:
                found = conn.execute(
                    "SELECT digest, child_id FROM nb_agents_claims WHERE snapshot_id = 'p'"
                ).fetchone()
            if found is not None:
                break
            await asyncio.sleep(0.025)
        assert found == ("ours", "c1")  # begun is begun: the cancelled caller's write was not cut off
        assert await store.claim_resume("p", "again", "c2") == ResumeClaim("ours", "c1")


async def test_a_write_after_the_server_dropped_its_connection_goes_through(
    dsn: str, pg_server: pg.PgServer
) -> None:
    async with PostgresSessionStore(dsn) as store:
        await put(store, snap("a"))  # leaves a connection of this loop, idle
        with psycopg.connect(pg_server.dsn("postgres"), autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (_dbname(dsn),)
            ).fetchall()
        assert killed and all(ok for (ok,) in killed)
        await asyncio.sleep(0.1)  # the server's goodbye reaches the idle sockets
        await put(store, snap("b", created=1))  # a write is never run again: it must get a live connection
        got = await store.get_snapshot("b")
        assert got is not None and got.to_wire() == snap("b", created=1).to_wire()


async def test_a_loop_uses_at_most_pool_size_connections(dsn: str, pg_server: pg.PgServer) -> None:
    seen: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        with psycopg.connect(pg_server.dsn("postgres"), autocommit=True) as admin:
            while not stop.is_set():
                row = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = %s AND backend_type = 'client backend'",
                    (_dbname(dsn),),
                ).fetchone()
                seen.append(row[0] if row else 0)

    async with PostgresSessionStore(dsn, pool_size=2) as store:
        await put(store, snap("first"))  # the schema: one connection of the pool (transactions)
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            await asyncio.gather(*(put(store, snap(f"r{i}", created=i)) for i in range(40)))
        finally:
            stop.set()
            watcher.join(10)
        assert all([await store.get_snapshot(f"r{i}") for i in range(40)])
    assert seen and max(seen) <= 3  # two of the loop's, one of the pool's


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
async def test_a_forked_child_writes_on_connections_of_its_own(dsn: str) -> None:
    async with PostgresSessionStore(dsn) as store:
        await put(store, snap("first"))  # a connection of this loop, idle, inherited by the child
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.alarm(15)

                async def child() -> None:
                    await put(store, snap("child", created=1))

                asyncio.run(child())
                gc.collect()
                code = 0
            finally:
                os._exit(code)
        _, status = await anyio.to_thread.run_sync(os.waitpid, pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # the parent's connection still works: the child neither used nor closed it
        await put(store, snap("after", created=2))
        for name in ("child", "after"):
            assert await store.get_snapshot(name) is not None


def test_a_store_dropped_without_close_closes_its_loop_connections(dsn: str) -> None:
    loop = asyncio.new_event_loop()
    try:
        store = PostgresSessionStore(dsn)
        loop.run_until_complete(put(store, snap("a")))
        idle = [conn for on in store._on_loops._loops.values() for conn in on.idle]
        assert idle
        ref = weakref.ref(store)
        del store
        gc.collect()
        assert ref() is None
        assert all(conn.closed for conn in idle)
    finally:
        loop.close()


async def test_a_read_on_the_loop_builds_a_history_it_has_not_seen(dsn: str) -> None:
    """A second store (another process: nothing cached) reads rows whose histories are built on
    bases: the row's statement and its base chain's, on the loop, whole."""
    async with PostgresSessionStore(dsn) as writer, PostgresSessionStore(dsn) as reader:
        parent = None
        for i in range(1, 6):
            row = snap(
                f"t{i}", parent_id=parent, created=i, messages=[msg("user", f"q{j}") for j in range(i)]
            )
            await put(writer, row)
            parent = row.snapshot_id
        got = await reader.get_snapshot("t5")
        assert (
            got is not None
            and got.to_wire()
            == snap(
                "t5", parent_id="t4", created=5, messages=[msg("user", f"q{j}") for j in range(5)]
            ).to_wire()
        )
        on_loop = reader._on_loops._loops.get(asyncio.get_running_loop())
        assert on_loop is not None and on_loop.idle  # its statements ran on this loop's connections


def test_a_row_written_between_its_statement_and_its_chain_is_read_again_elsewhere() -> None:
    """The read's two statements run outside a transaction: when the chain starts at another
    revision of the row than the row's statement read, the read says so (`SLOW`), and the
    store reads the row again in one snapshot (the general path)."""
    fast = Fast(RecentRows(), MessageCache())
    reading = fast.read("t2")
    assert next(reading)[0] == BY_ID
    row = (7, 2, '{"snapshotId": "t2"}', '{"sessionId": "s1"}', 6, 1, '[{"role": "user"}]', None, None)
    assert reading.send([row])[0] == CHAIN
    with pytest.raises(StopIteration) as done:
        reading.send([(7, 3, 1, "[]"), (6, 1, None, "[]")])  # the row is at revision 3 now
    assert done.value.value == SLOW
    assert fast.recent.get("t2") is None  # nothing of it is remembered


async def test_where_psycopg_cannot_wait_on_the_loop_the_same_calls_run_in_threads(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows' proactor loop has no readers for psycopg to wait on: there the same generators
    of statements run on the pool's sync connections in worker threads (`_pg_aio.drive`)."""
    monkeypatch.setattr(LoopConnections, "usable", staticmethod(lambda loop: False))
    async with PostgresSessionStore(dsn) as store:
        await put(store, snap("p", messages=[msg("user", "hi")]))
        await put(
            store, snap("c", parent_id="p", created=1, messages=[msg("user", "hi"), msg("model", "yo")])
        )
        assert await store.claim_resume("c", "d", "k") is None
        assert await store.claim_resume("c", "e", "k2") == ResumeClaim("d", "k")
        latest = await store.get_latest("s1")
        assert latest is not None and latest.snapshot_id == "c"
        got = await store.get_snapshot("c")
        assert got is not None and [m.text for m in got.state.messages] == ["hi", "yo"]
        assert not store._on_loops._loops  # no connection of the loop was opened
