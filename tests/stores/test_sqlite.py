"""What only `SqliteSessionStore` promises: it answers as the in-memory store does
after any sequence of writes, stores each turn compactly, never waits for a lock on
the event loop, and refuses a database file of another schema version."""

from __future__ import annotations

import asyncio
import gc
import json
import random
import sqlite3
import threading
import uuid
import weakref
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

import nb_agents as nba
from nb_agents.errors import FailedPreconditionError
from nb_agents.stores.memory import InMemorySessionStore
from nb_agents.stores.sqlite import SqliteSessionStore
from nb_agents.testing import FunctionModel
from nb_agents.testing._store_samples import snap, ts
from nb_agents.types import Message, SessionSnapshot, SessionState

from .test_stores import _disk_size

pytestmark = pytest.mark.anyio

IDS = ["a", "b", "c", "d", "e", "f", "g", *(str(uuid.UUID(int=i * 7919 + 1)) for i in range(6))]
SESSIONS = ["s1", "s2", str(uuid.UUID(int=42)), None]
TIMES = [ts(0), ts(1), ts(1), ts(5), "2026-01-01T00:00:03Z", "2026-01-01T00:00:02.500000Z", None]


def _message(rng: random.Random, n: int) -> Message:
    role = rng.choice(["user", "model"])
    return Message.model_validate(
        {"role": role, "content": [{"text": f"message {n} " + "x" * rng.randint(0, 80)}]}
    )


async def _random_snapshot(rng: random.Random, memory: InMemorySessionStore, step: int) -> SessionSnapshot:
    snapshot_id = rng.choice(IDS)
    parent_id = rng.choice([*IDS, None, "never-saved"])
    base: list[Message] = []
    parent = await memory.get_snapshot(parent_id) if parent_id else None
    if parent is not None and parent.state is not None:
        base = list(parent.state.messages)
    how = rng.random()
    if how < 0.15:
        state = None
    elif how < 0.25:
        state = SessionState(custom={"step": step})  # messages never set
    else:
        keep = len(base) if rng.random() < 0.7 else rng.randint(0, len(base))
        kept = base[:keep]
        if rng.random() < 0.3:  # equal copies, not the same objects
            kept = [Message.model_validate(m.to_wire()) for m in kept]
        new = [_message(rng, step * 10 + i) for i in range(rng.randint(0, 3))]
        state = SessionState(session_id=rng.choice(SESSIONS), messages=kept + new, artifacts=[])
    return SessionSnapshot(
        snapshot_id=snapshot_id,
        session_id=rng.choice(SESSIONS),
        parent_id=parent_id,
        created_at=rng.choice(TIMES),
        status=rng.choice(["completed", "failed", "aborted", None]),
        finish_reason=rng.choice(["stop", "interrupted", None]),
        state=state,
    )


async def _same_answers(sqlite_store: SqliteSessionStore, memory: InMemorySessionStore) -> None:
    for snapshot_id in [*IDS, "never-saved"]:
        got, want = await sqlite_store.get_snapshot(snapshot_id), await memory.get_snapshot(snapshot_id)
        assert (got.to_wire() if got else None) == (want.to_wire() if want else None), snapshot_id
    for session_id in SESSIONS:
        if session_id is not None:
            got, want = await sqlite_store.get_latest(session_id), await memory.get_latest(session_id)
            assert (got.to_wire() if got else None) == (want.to_wire() if want else None), session_id
    assert set(await sqlite_store.session_ids()) == set(await memory.session_ids())


@pytest.mark.parametrize("seed", range(6))
async def test_any_sequence_of_writes_reads_as_in_memory(tmp_path: Path, seed: int) -> None:
    """Rows written in any order (children before their parents, rewrites that move a row,
    drop messages or the state) read back as the in-memory store keeps them."""
    rng = random.Random(seed)
    path = tmp_path / "agents.db"
    store, memory = SqliteSessionStore(path), InMemorySessionStore()
    for step in range(120):
        snap = await _random_snapshot(rng, memory, step)
        for s in (store, memory):
            await s.save_snapshot(snap.snapshot_id, lambda cur, snap=snap: snap)
        if step % 40 == 39:
            await _same_answers(store, memory)
    await _same_answers(store, memory)
    fresh = SqliteSessionStore(path)  # nothing cached: every history rebuilt from its chain
    await _same_answers(fresh, memory)
    store.close()
    fresh.close()


async def test_children_written_before_their_parent(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "agents.db")
    await store.save_snapshot("kid", lambda cur: snap("kid", parent_id="mom", created=5))
    await store.save_snapshot("other-kid", lambda cur: snap("other-kid", session_id="s2", parent_id="mom"))
    await store.save_snapshot("mom", lambda cur: snap("mom", created=9))
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "kid"  # mom is no leaf, though newer
    kid = await store.get_snapshot("kid")
    assert kid is not None and kid.parent_id == "mom"
    await store.save_snapshot("kid", lambda cur: snap("kid", parent_id=None, created=5))  # moved away
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "mom"
    store.close()


def _approval_agent(store: nba.SessionStore) -> nba.Agent:
    def model(req: nba.GenerateRequest) -> dict[str, Any] | str:
        if req.messages[-1].role == "tool":
            return "done"
        call = {"toolRequest": {"name": "transfer", "ref": f"t{len(req.messages)}", "input": {"amount": 5}}}
        return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}

    @nba.tool(name="transfer")
    async def transfer(amount: int) -> str:
        return "ok"

    return nba.define_agent(
        "bank", model=FunctionModel(model), tools=[transfer], store=store, use=[nba.middleware.ToolApproval()]
    )


async def test_an_approval_cycle_stores_a_few_hundred_bytes(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    store = SqliteSessionStore(path)
    agent = _approval_agent(store)
    snapshot_id: str | None = None
    sizes: dict[int, int] = {}
    for cycle in range(1, 201):
        res = await agent.chat(snapshot_id=snapshot_id).send("transfer")  # stateless: by id, as a server
        res = await agent.chat(snapshot_id=res.snapshot_id).resume(restart=[res.interrupts[0].approve()])
        assert res.text == "done"
        snapshot_id = res.snapshot_id
        if cycle in (100, 200):
            sizes[cycle] = _disk_size(str(path))
    per_cycle = (sizes[200] - sizes[100]) / 100
    print(f"\nSQLite: {sizes[200]} B after 200 approval cycles, {per_cycle:.0f} B per cycle")
    assert per_cycle < 1200  # two snapshots, a claim and an audit record; 2.9 KB in schema version 1
    assert len(await agent.audit(res.session_id)) == 200  # type: ignore[arg-type]
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT length(id), typeof(id), meta, state, typeof(tail) FROM snapshots").fetchall()
    claims = conn.execute("SELECT typeof(snap), length(digest), typeof(child) FROM claims").fetchall()
    conn.close()
    # ids as 16 bytes, nothing repeated; a turn's meta is its timing alone (a few dozen bytes)
    assert {(a, b, c, d) for a, b, _, c, d in rows} == {(16, "blob", "{}", "blob")}
    assert {tuple(json.loads(meta)) if meta else () for _, _, meta, _, _ in rows} == {("timing",)}
    assert set(claims) == {("integer", 32, "integer")}
    store.close()


async def test_a_busy_database_is_waited_for_off_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    store = SqliteSessionStore(path)
    await store.save_snapshot("first", lambda cur: snap("first"))  # the schema exists
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    save = asyncio.ensure_future(store.save_snapshot("second", lambda cur: snap("second", created=1)))
    for _ in range(5):  # the loop runs on while the save waits (a blocked loop would not get here)
        await asyncio.sleep(0.01)
    assert not save.done()
    assert other.execute("SELECT count(*) FROM snapshots").fetchone() == (1,)
    other.execute("COMMIT")
    other.close()
    written = await save
    assert written is not None and written.snapshot_id == "second"
    got = await store.get_snapshot("second")
    assert got is not None and got.to_wire() == snap("second", created=1).to_wire()
    store.close()


async def test_a_database_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE snapshots (seq INTEGER PRIMARY KEY, snapshot_id TEXT)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with pytest.raises(FailedPreconditionError, match=r"old\.db has nb_agents schema version 1"):
        with SqliteSessionStore(path) as store:
            await store.get_snapshot("x")


async def test_a_store_that_syncs_every_commit(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "agents.db", synchronous="full")
    for i in range(3):
        await store.save_snapshot(f"t{i}", lambda cur, i=i: snap(f"t{i}", parent_id=f"t{i - 1}", created=i))
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "t2"
    store.close()
    with pytest.raises(ValueError, match="synchronous must be one of"):
        SqliteSessionStore(tmp_path / "x.db", synchronous="sometimes")


async def test_a_store_dropped_without_close_closes_its_connections(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "agents.db")
    await store.save_snapshot("a", lambda cur: snap("a"))
    await store.get_snapshot("a")
    await anyio.to_thread.run_sync(int)  # anyio's idle worker holds its last job (the store's) until the next
    pooled = [conn for pool in store._pools.values() for conn in pool]
    ref = weakref.ref(store)
    gc.disable()
    try:
        del store
        assert ref() is None and pooled  # freed at once: no reference cycle waits for the garbage collector
    finally:
        gc.enable()
    for conn in pooled:
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            conn.execute("SELECT 1")


DATA = Path(__file__).parent / "data"


def _load_v2(path: Path) -> None:
    """A database as nb_agents wrote it at schema version 2 (tests/stores/data/sqlite_v2.sql)."""
    conn = sqlite3.connect(path)
    conn.executescript((DATA / "sqlite_v2.sql").read_text())
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()


async def test_a_version_2_database_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    _load_v2(path)
    store = SqliteSessionStore(path)
    paused = await store.get_latest("acct-1")
    assert paused is not None and paused.finish_reason == "interrupted"
    assert (paused.agent, paused.owner) == ("bank", "ana")
    records = await store.audit("acct-1")
    assert [(r.answered_by, r.claimed_by) for r in records] == [("ana", None), ("ana", None)]
    first = records[0]
    claim = await store.claim_resume(first.snapshot_id, "another answer", "late")
    assert claim is not None and claim.child_id == first.child_id and claim.generation == 1
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (3,)
    assert conn.execute("SELECT id, agent, owner FROM sessions").fetchall() == [("acct-1", "bank", "ana")]
    conn.close()
    # the migrated session goes on: its paused turn is answered with the new code
    [turn] = await _approval_agent(store).pending()  # no caller context: the owner's session is listed
    assert turn.snapshot_id == paused.snapshot_id
    res = await turn.chat().resume(restart=[turn.interrupts[0].approve()], metadata={"answeredBy": "ana"})
    assert res.text == "done"
    done = await store.get_snapshot(res.snapshot_id)  # type: ignore[arg-type]
    assert done is not None and (done.agent, done.owner) == ("bank", "ana")  # the session's, kept
    assert len(await store.audit("acct-1")) == 3
    store.close()
    with SqliteSessionStore(path) as again:  # a second open finds version 3: nothing to do
        latest = await again.get_latest("acct-1")
        assert latest is not None and latest.snapshot_id == res.snapshot_id


async def test_a_row_reads_its_sessions_agent_and_owner(tmp_path: Path) -> None:
    """Agent and owner are stored once per session: a row saved with others reads the session's."""
    path = tmp_path / "agents.db"
    with SqliteSessionStore(path) as store:
        await store.save_snapshot("a", lambda cur: snap("a", agent="bank"))  # no owner yet
        written = await store.save_snapshot("b", lambda cur: snap("b", parent_id="a", created=1, owner="ana"))
        assert written is not None and (written.agent, written.owner) == ("bank", "ana")
        await store.save_snapshot("c", lambda cur: snap("c", parent_id="b", created=2, agent="x", owner="y"))
        loose = SessionSnapshot(
            snapshot_id="loose", status="completed", agent="solo", owner="zed"
        )  # no session
        await store.save_snapshot("loose", lambda cur: loose)
        for snapshot_id in ("a", "b", "c"):
            got = await store.get_snapshot(snapshot_id)
            assert got is not None and (got.agent, got.owner) == ("bank", "ana"), snapshot_id
        got = await store.get_snapshot("loose")
        assert got is not None and got.to_wire() == loose.to_wire()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT agent, owner FROM sessions").fetchall() == [("bank", "ana")]
    assert {m for (m,) in conn.execute("SELECT meta FROM snapshots WHERE session IS NOT NULL")} == {None}
    conn.close()


def _commits(path: Path) -> int:
    """How many transactions the database's WAL holds: its commit frames (those of its current salt)."""
    wal = Path(f"{path}-wal")
    data = wal.read_bytes() if wal.exists() else b""
    if len(data) < 32:
        return 0
    page_size, salt = int.from_bytes(data[8:12], "big"), data[16:24]
    commits, at = 0, 32
    while at + 24 + page_size <= len(data) and data[at + 8 : at + 16] == salt:
        commits += int.from_bytes(data[at + 4 : at + 8], "big") != 0  # the database's size after a commit
        at += 24 + page_size
    return commits


async def test_writes_off_the_loop_commit_together(tmp_path: Path) -> None:
    """With ``synchronous="full"`` every commit fsyncs, so writes run in worker threads: those
    that wait while a batch commits go in the next, one transaction (and one fsync) for all,
    and a write that fails there fails alone."""
    path = tmp_path / "agents.db"
    store = SqliteSessionStore(path, synchronous="full")
    await store.save_snapshot("first", lambda cur: snap("first"))
    holding, go = threading.Event(), threading.Event()

    def slow(cur: SessionSnapshot | None) -> SessionSnapshot:
        holding.set()
        go.wait(10)
        return snap("slow", created=1)

    first = asyncio.ensure_future(store.save_snapshot("slow", slow))
    assert await anyio.to_thread.run_sync(holding.wait, 10)  # its batch holds the file's write lock
    before = _commits(path)
    gathered = ten_saves_and_a_failing_one(store)
    for _ in range(3):
        await asyncio.sleep(0)  # every save is queued behind the batch that holds the lock
    go.set()
    results = await gathered
    assert (await first) is not None
    assert _commits(path) - before == 2  # the batch of `slow`, then one for the eleven that waited
    await check_ten_saved_and_the_failing_one_alone(store, results)
    store.close()


def ten_saves_and_a_failing_one(
    store: SqliteSessionStore, error: type[BaseException] = RuntimeError
) -> asyncio.Future[list[Any]]:
    """Ten saves (``w0``..``w9``) with one that raises `error` between the fifth and the sixth, gathered."""

    def boom(cur: SessionSnapshot | None) -> SessionSnapshot:
        raise error("boom")

    saves = [store.save_snapshot(f"w{i}", lambda cur, i=i: snap(f"w{i}", created=2 + i)) for i in range(10)]
    return asyncio.gather(*saves[:5], store.save_snapshot("bad", boom), *saves[5:], return_exceptions=True)


async def check_ten_saved_and_the_failing_one_alone(
    store: SqliteSessionStore, results: list[Any], error: type[BaseException] = RuntimeError
) -> None:
    """`ten_saves_and_a_failing_one`'s outcome: the failing save raised and wrote nothing,
    the ten were written."""
    assert isinstance(results[5], error) and str(results[5]) == "boom"
    written = [r for i, r in enumerate(results) if i != 5]
    assert [r.snapshot_id for r in written if isinstance(r, SessionSnapshot)] == [f"w{i}" for i in range(10)]
    for i in range(10):
        got = await store.get_snapshot(f"w{i}")
        assert got is not None and got.to_wire() == snap(f"w{i}", created=2 + i).to_wire()
    assert await store.get_snapshot("bad") is None
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "w9"


async def test_the_wal_is_started_over_under_steady_writes(tmp_path: Path) -> None:
    """Writers that never pause leave a passive checkpoint no moment to start the WAL over,
    which then grows without end; a checkpoint that finds 10,000 frames or more truncates it."""
    path = tmp_path / "agents.db"
    store = SqliteSessionStore(path)

    def frames() -> int:
        return Path(f"{path}-wal").stat().st_size // (4096 + 24)

    async def writer(w: int, n: int) -> None:
        for i in range(n):
            await store.save_snapshot(
                f"w{w}-{i}", lambda cur, i=i: snap(f"w{w}-{i}", session_id=f"s{w}", created=i)
            )

    await asyncio.gather(*(writer(w, 300) for w in range(20)))  # about 6 WAL frames a save
    await writer(20, 250)  # one writer: the checkpoint its 200th save starts runs before it goes on
    assert frames() < 10_000
    latest = await store.get_latest("s19")
    assert latest is not None and latest.snapshot_id == "w19-299"
    store.close()
