"""`PostgresSessionStore` on a real PostgreSQL server started for the tests (tests/pg.py).

The store contract runs on Postgres with every other store (test_conformance_suite.py);
here is what a shared database promises: several processes, one winner per claim, no
lost update, storage that grows with each turn, and an agent whose interrupt is answered
from two processes at once running its tool exactly once. Every store a test opens is
closed by the test (a pooled connection left to the garbage collector warns).
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import queue
import signal
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import anyio
import pg
import pytest

import nb_agents as nba
from nb_agents import _sync
from nb_agents.errors import FailedPreconditionError
from nb_agents.stores.base import AuditRecord, ResumeClaim
from nb_agents.testing import FunctionModel
from nb_agents.testing._store_samples import RICH, put, snap, ts
from nb_agents.types import Message, SessionSnapshot, SessionState

from .test_stores import _turn_messages, check_long_session

if not pg.in_ci():  # under CI a missing psycopg is an error, not a skip
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[postgres]')")
import psycopg  # noqa: E402

from nb_agents.stores.postgres import PostgresSessionStore  # noqa: E402

pytestmark = pytest.mark.anyio  # the server and a database per test: conftest.py's `pg_server`, `dsn`


# -- one database, several store instances, threads and loops ----------------------------
async def test_persists_across_store_instances(dsn: str) -> None:
    async with PostgresSessionStore(dsn) as first, PostgresSessionStore(dsn) as second:
        await put(first, SessionSnapshot.model_validate(RICH))
        await first.claim_resume("snap-1", "d", "child")
        await first.add_audit([AuditRecord("sess-1", "snap-1", "child", "t", "r", "respond", 1, None, ts(0))])
        got = await second.get_snapshot("snap-1")
        assert got is not None and got.to_wire() == RICH
        latest = await second.get_latest("sess-1")
        assert latest is not None and latest.to_wire() == RICH
        assert await second.session_ids() == ["sess-1"]
        assert await second.claim_resume("snap-1", "d2", "c2") == ResumeClaim("d", "child")
        assert [r.answer for r in await second.audit("sess-1")] == [1]


def test_works_from_several_event_loops_threads_and_the_sync_loop(dsn: str) -> None:
    with PostgresSessionStore(dsn) as store:
        _several_loops(store)


def _several_loops(store: PostgresSessionStore) -> None:
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            asyncio.run(put(store, snap(f"t{i}", created=i)))
            got = asyncio.run(store.get_snapshot(f"t{i}"))
            assert got is not None and got.snapshot_id == f"t{i}"
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    # the loop the *_sync twins run on, and a plain anyio.run, share the same pooled store
    _sync.run(put(store, snap("t6", created=6)))
    latest = _sync.run(store.get_latest("s1"))
    assert latest is not None and latest.snapshot_id == "t6"
    assert anyio.run(store.session_ids) == ["s1"]


async def test_a_connection_the_server_dropped_is_replaced(dsn: str, pg_server: pg.PgServer) -> None:
    async with PostgresSessionStore(dsn) as store:
        await put(store, snap("a"))  # leaves a pooled connection
        dbname = dsn.split("dbname=")[1].split()[0]
        with psycopg.connect(pg_server.dsn("postgres"), autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (dbname,)
            ).fetchall()
        assert killed and all(ok for (ok,) in killed)
        got = await store.get_snapshot("a")
        assert got is not None and got.snapshot_id == "a"


async def test_a_newer_schema_is_refused(dsn: str) -> None:
    async with PostgresSessionStore(dsn) as store:
        await put(store, snap("a"))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE nb_agents_meta SET value = '99' WHERE key = 'schema_version'")
    async with PostgresSessionStore(dsn) as store:
        with pytest.raises(FailedPreconditionError, match="schema version 99"):
            await store.get_snapshot("a")


def test_a_store_dropped_without_close_closes_its_connections(dsn: str) -> None:
    async def use(store: PostgresSessionStore) -> None:
        await put(store, snap("a"))
        # anyio's idle worker thread holds its last job (the store's) until it runs the next
        await anyio.to_thread.run_sync(int)

    store = PostgresSessionStore(dsn)
    anyio.run(use, store)
    idle = list(store._pool._idle)
    ref = weakref.ref(store)
    gc.disable()
    try:
        del store
        assert ref() is None  # freed at once: no reference cycle waits for the garbage collector
    finally:
        gc.enable()
    assert idle and all(conn.closed for conn in idle)


def test_repr_hides_the_password_and_a_bad_dsn_is_named() -> None:
    store = PostgresSessionStore("postgresql://ann:s3cret@127.0.0.1:5999/agents")
    assert "s3cret" not in repr(store) and "dbname=agents" in repr(store)
    with pytest.raises(ValueError, match="DSN"):
        PostgresSessionStore("host=127.0.0.1 'unterminated")
    with pytest.raises(ValueError, match="pool_size"):
        PostgresSessionStore("dbname=x", pool_size=-1)


# -- a turn stores what it adds; rewrites keep the rows built on them -------------------
def _relation_bytes(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
            "WHERE c.relkind = 'r' AND c.relname LIKE 'nb\\_agents\\_%%'"
        ).fetchone()
    assert row is not None
    return int(row[0])


async def test_storage_grows_with_each_turn_not_the_history(dsn: str) -> None:
    store = PostgresSessionStore(dsn)
    messages: list[Message] = []
    sizes: dict[int, int] = {}
    parent: str | None = None
    for i in range(1, 501):
        messages = [*messages, *_turn_messages(i)]
        state = SessionState(session_id="long", messages=messages, custom={"turns": i})
        row = SessionSnapshot(
            snapshot_id=f"turn-{i:03d}",
            session_id="long",
            parent_id=parent,
            created_at=ts(i),
            updated_at=ts(i),
            status="completed",
            finish_reason="stop",
            state=state,
        )
        await put(store, row)
        parent = row.snapshot_id
        if i in (250, 500):
            sizes[i] = _relation_bytes(dsn)
    avg_message = sum(len(m.to_json()) for m in messages) / len(messages)
    per_turn = (sizes[500] - sizes[250]) / 250
    print(f"\nPostgres: {sizes[250]} B after 250 turns, {sizes[500]} B after 500; {per_turn:.0f} B per turn")
    assert sizes[500] < 3 * sizes[250]
    assert per_turn < 4 * 2 * avg_message  # a full copy would cost ~1000 messages a turn by now

    await check_long_session(store, PostgresSessionStore(dsn), messages)


def _tails(dsn: str) -> dict[str, tuple[int, int]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT snapshot_id, base_len, json_array_length(tail::json) FROM nb_agents_snapshots"
        ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


async def test_delta_without_shared_objects(dsn: str) -> None:
    """Equal copies (a state sent back by another process) still store only the new messages."""
    one, two = _turn_messages(1), _turn_messages(2)
    store, other = PostgresSessionStore(dsn), PostgresSessionStore(dsn)
    await put(store, snap("a", messages=one))
    copies = [Message.model_validate(m.to_wire()) for m in one]
    await put(other, snap("b", parent_id="a", messages=[*copies, *two]))
    changed = [copies[0], Message.model_validate({**copies[1].to_wire(), "metadata": {"turn": True}})]
    await put(other, snap("c", parent_id="a", messages=changed))
    assert _tails(dsn) == {"a": (0, 2), "b": (2, 2), "c": (1, 1)}
    async with PostgresSessionStore(dsn) as fresh:
        got = await fresh.get_snapshot("c")
    assert got is not None and got.state is not None
    assert got.state.messages[1].metadata == {"turn": True}  # 1 == True, but not as JSON
    store.close()
    other.close()


async def test_rewriting_a_base_row_keeps_its_children(dsn: str) -> None:
    store = PostgresSessionStore(dsn)
    hist = [*_turn_messages(1), *_turn_messages(2)]
    await put(store, snap("p", messages=hist))
    await put(store, snap("c", parent_id="p", messages=[*hist, *_turn_messages(3)]))
    await put(store, snap("g", parent_id="c", messages=[*hist, *_turn_messages(3), *_turn_messages(4)]))
    await put(store, snap("p", messages=hist[:1]))  # p loses three messages
    async with PostgresSessionStore(dsn) as fresh:
        for s in (store, fresh):
            c, g = await s.get_snapshot("c"), await s.get_snapshot("g")
            assert c is not None and c.state is not None and g is not None and g.state is not None
            want = [*hist, *_turn_messages(3)]
            assert [m.to_wire() for m in c.state.messages] == [m.to_wire() for m in want]
            assert len(g.state.messages) == 8 and g.state.messages[:6] == c.state.messages
    await put(store, SessionSnapshot(snapshot_id="p", session_id="s1", status="pending"))  # no state at all
    async with PostgresSessionStore(dsn) as fresh:
        c = await fresh.get_snapshot("c")
    assert c is not None and c.state is not None and len(c.state.messages) == 6
    store.close()


async def test_children_saved_while_their_base_is_rewritten_read_back_whole(dsn: str) -> None:
    """Rows delta-encoded against a parent that another connection rewrites at the same time."""
    hist = [*_turn_messages(1), *_turn_messages(2), *_turn_messages(3)]
    store = PostgresSessionStore(dsn, pool_size=16)
    await put(store, snap("p", messages=hist))
    expected: dict[str, list[Message]] = {}
    async with anyio.create_task_group() as tg:
        for round_ in range(4):
            for i in range(6):
                kid = f"kid-{round_}-{i}"
                expected[kid] = [*hist, *_turn_messages(10 + i)]
                tg.start_soon(put, store, snap(kid, parent_id="p", messages=expected[kid], created=1))
            # p keeps fewer and fewer of its messages, then a different history
            tg.start_soon(put, store, snap("p", messages=hist[: 5 - round_]))
    await put(store, snap("p", messages=_turn_messages(99)))
    fresh = PostgresSessionStore(dsn)  # nothing cached: every history is rebuilt from rows
    for kid, messages in expected.items():
        got = await fresh.get_snapshot(kid)
        assert got is not None and got.state is not None
        assert [m.to_wire() for m in got.state.messages] == [m.to_wire() for m in messages], kid
    store.close()
    fresh.close()


# -- several processes on one database ---------------------------------------------------
ROUNDS = 30


def _claim_worker(dsn: str, name: str, barrier: Any, queue: Any) -> None:
    async def run() -> list[tuple[str, Any]]:
        out = []
        async with PostgresSessionStore(dsn) as store:
            for i in range(ROUNDS):
                res = await store.claim_resume(f"snap-{i}", f"digest-{name}", f"{name}-{i}")
                out.append((f"snap-{i}", None if res is None else (res.digest, res.child_id)))
        return out

    barrier.wait()  # both start on an empty database: the schema is created under their race too
    queue.put((name, anyio.run(run)))


class _Workers:
    """`count` spawned processes running `target(*args, name, barrier, queue)`; each puts one result."""

    def __init__(self, target: Any, *args: Any, count: int = 2) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.barrier = ctx.Barrier(count)  # kept referenced until the children have it
        self.queue = ctx.Queue()
        self.procs = [
            ctx.Process(target=target, args=(*args, f"p{i + 1}", self.barrier, self.queue))
            for i in range(count)
        ]
        for p in self.procs:
            p.start()

    def results(self, timeout: float = 120.0) -> list[Any]:
        """One result per process; fails at once when one of them died."""
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(out) < len(self.procs):
            try:
                out.append(self.queue.get(timeout=0.2))
            except queue.Empty:
                dead = [p.exitcode for p in self.procs if p.exitcode not in (None, 0)]
                assert not dead and time.monotonic() < deadline, f"worker exit codes {dead}"
        for p in self.procs:
            p.join(timeout=60)
            assert p.exitcode == 0
        return out


def test_two_processes_race_to_claim(dsn: str) -> None:
    results = dict(_Workers(_claim_worker, dsn).results())
    for i in range(ROUNDS):
        outcomes = {name: dict(results[name])[f"snap-{i}"] for name in ("p1", "p2")}
        winners = [name for name, res in outcomes.items() if res is None]
        assert len(winners) == 1, outcomes
        loser = "p2" if winners[0] == "p1" else "p1"
        assert outcomes[loser] == (f"digest-{winners[0]}", f"{winners[0]}-{i}")


def _count_worker(dsn: str, name: str, barrier: Any, queue: Any) -> None:
    def bump(cur: SessionSnapshot | None) -> SessionSnapshot:
        n = 0 if cur is None or cur.state is None else cur.state.custom
        return SessionSnapshot(snapshot_id="counter", session_id="s1", state=SessionState(custom=n + 1))

    async def run() -> None:
        async with PostgresSessionStore(dsn) as store:
            for _ in range(ROUNDS):
                await store.save_snapshot("counter", bump)

    barrier.wait()
    anyio.run(run)
    queue.put(name)


def test_two_processes_read_modify_write_without_lost_updates(dsn: str) -> None:
    assert sorted(_Workers(_count_worker, dsn).results()) == ["p1", "p2"]
    with PostgresSessionStore(dsn) as store:
        got = anyio.run(store.get_snapshot, "counter")
    assert got is not None and got.state is not None and got.state.custom == 2 * ROUNDS


# -- an agent: one interrupt answered from two processes runs the tool once --------------
def _bank(store: PostgresSessionStore, ledger: str) -> nba.Agent:
    def rules(req: nba.GenerateRequest) -> dict[str, Any] | str:
        if req.messages[-1].role == "tool":
            return "transfer done"
        call = {"toolRequest": {"name": "transfer", "ref": "t1", "input": {"amount": 500}}}
        return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}

    @nba.tool(name="transfer")
    async def transfer(amount: int, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"amount": amount})
        await asyncio.sleep(0.2)  # a slow side effect: the other process races it
        with open(ledger, "a") as f:
            f.write(f"{amount}\n")
        return "ok"

    return nba.define_agent("bank", model=FunctionModel(rules), tools=[transfer], store=store)


def _resume_worker(dsn: str, ledger: str, name: str, barrier: Any, queue: Any) -> None:
    async def run() -> tuple[str, str | None]:
        async with PostgresSessionStore(dsn) as store:
            agent = _bank(store, ledger)
            (turn,) = await agent.pending()  # both see the paused turn before either answers
            await anyio.to_thread.run_sync(barrier.wait)
            res = await turn.chat().resume(restart=[turn.interrupts[0].restart(resumed=True)])
        return res.finish_reason, res.snapshot_id

    queue.put((name, asyncio.run(run())))


async def test_two_processes_resume_one_interrupt_and_the_tool_runs_once(dsn: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    async with PostgresSessionStore(dsn) as store:
        paused = await _bank(store, str(ledger)).run_text("send 500", session_id="acct-1")
        assert paused.finish_reason == "interrupted" and not ledger.exists()
        workers = _Workers(_resume_worker, dsn, str(ledger))
        results = dict(await anyio.to_thread.run_sync(workers.results))
        assert ledger.read_text().splitlines() == ["500"]
        assert [r[0] for r in results.values()] == ["stop", "stop"]
        assert results["p1"][1] == results["p2"][1] != paused.snapshot_id  # both see the one resumed turn
        trail = await store.audit("acct-1")
    assert [(r.snapshot_id, r.kind, r.answer) for r in trail] == [(paused.snapshot_id, "restart", True)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
async def test_a_child_forked_while_a_thread_holds_the_pools_lock_still_reads_and_writes(dsn: str) -> None:
    """A thread of the parent holding the pool's or the listener's lock at the fork (taking a
    connection, starting to listen) does not exist in the child: the child's calls must not
    wait for it, and use connections of their own."""
    async with PostgresSessionStore(dsn) as store:
        await put(store, snap("first"))
        pool, listener = store._pool, store._listener
        held, let_go = threading.Event(), threading.Event()

        def hold() -> None:
            with pool._lock, listener._lock:
                held.set()
                let_go.wait(30)

        holder = threading.Thread(target=hold)
        holder.start()
        assert held.wait(10)
        pid = os.fork()
        if pid == 0:  # the child: the locks' holder is not here
            code = 1
            try:
                signal.alarm(15)  # a hang is a failure, not a stuck suite

                async def child() -> None:
                    assert await store.get_snapshot("first") is not None
                    await put(store, snap("child", created=1))
                    await store.wait_changed("child", 0.01)  # starts the child's own listener

                asyncio.run(child())
                code = 0
            finally:
                os._exit(code)
        try:
            _, status = await anyio.to_thread.run_sync(os.waitpid, pid, 0)
        finally:
            let_go.set()
            holder.join(10)
        assert os.waitstatus_to_exitcode(status) == 0  # -SIGALRM: it waited for a thread it does not have
        got = await store.get_snapshot("child")
        assert got is not None and got.to_wire() == snap("child", created=1).to_wire()
