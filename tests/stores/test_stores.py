"""What some stores promise beyond the contract (which `test_conformance_suite.py`
checks on every store): the in-memory store's rows stay out of the garbage
collector's sight; the file and SQLite stores persist across instances and
processes; the file store names files safely; SQLite stores what a turn adds.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from nb_agents.stores._sqlite_codec import decode_id, unpack_tail
from nb_agents.stores.base import AuditRecord, ResumeClaim
from nb_agents.stores.file import FileSessionStore
from nb_agents.stores.memory import InMemorySessionStore
from nb_agents.stores.sqlite import SqliteSessionStore
from nb_agents.testing._store_samples import RICH, put, snap, ts
from nb_agents.types import Message, SessionSnapshot, SessionState

pytestmark = pytest.mark.anyio


def _make(kind: str, where: str) -> Any:
    if kind == "memory":
        return InMemorySessionStore()
    if kind == "file":
        return FileSessionStore(where)
    return SqliteSessionStore(os.path.join(where, "agents.db"))


# -- the in-memory store ------------------------------------------------------------------
async def test_memory_rows_are_not_tracked_by_the_garbage_collector() -> None:
    """Rows are exact tuples of str/int/None, which a collection untracks: a full
    collection then does not visit every stored row (a tuple subclass would stay tracked)."""
    store = InMemorySessionStore()
    for i in range(20):
        await put(store, snap(f"t{i}", parent_id=f"t{i - 1}" if i else None, created=i))
    gc.collect()
    rows = list(store._data.rows.values())
    assert len(rows) == 20 and all(type(row) is tuple for row in rows)
    assert not any(gc.is_tracked(row) for row in rows)


# -- persistent stores ------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_persists_across_store_instances(kind: str, tmp_path: Path) -> None:
    with _make(kind, str(tmp_path)) as first, _make(kind, str(tmp_path)) as second:
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


async def test_file_names_are_safe_for_any_id(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "store")
    weird = ["../../escape", "a/b\\c", "A", "a", "#", ".hidden", "ünï 😀", "x" * 500, "con"]
    for i, sid in enumerate(weird):
        await put(store, snap(f"{sid}#snap", session_id=sid, created=i))
    for sid in weird:
        latest = await store.get_latest(sid)
        assert latest is not None and latest.session_id == sid and latest.snapshot_id == f"{sid}#snap"
    assert sorted(await store.session_ids()) == sorted(weird)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert all(p.is_relative_to(tmp_path / "store") for p in files)
    assert all(len(p.name) < 100 for p in files)
    snapshot_files = list((tmp_path / "store" / "snapshots").iterdir())
    assert len(snapshot_files) == len(weird)
    assert '\n  "snapshotId"' in snapshot_files[0].read_text(encoding="utf-8")  # pretty-printed


# -- two processes on one file -------------------------------------------------------
ROUNDS = 30


def _claim_worker(kind: str, where: str, name: str, barrier: Any, queue: Any) -> None:
    async def run() -> list[tuple[str, Any]]:
        out = []
        with _make(kind, where) as store:
            for i in range(ROUNDS):
                res = await store.claim_resume(f"snap-{i}", f"digest-{name}", f"{name}-{i}")
                out.append((f"snap-{i}", None if res is None else (res.digest, res.child_id)))
        return out

    barrier.wait()
    queue.put((name, anyio.run(run)))


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_two_processes_race_to_claim(kind: str, tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_claim_worker, args=(kind, str(tmp_path), name, barrier, queue))
        for name in ("p1", "p2")
    ]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    for i in range(ROUNDS):
        outcomes = {name: dict(results[name])[f"snap-{i}"] for name in ("p1", "p2")}
        winners = [name for name, res in outcomes.items() if res is None]
        assert len(winners) == 1, outcomes
        loser = "p2" if winners[0] == "p1" else "p1"
        assert outcomes[loser] == (f"digest-{winners[0]}", f"{winners[0]}-{i}")


def _count_worker(kind: str, where: str, barrier: Any, queue: Any) -> None:
    def bump(cur: SessionSnapshot | None) -> SessionSnapshot:
        n = 0 if cur is None or cur.state is None else cur.state.custom
        return SessionSnapshot(snapshot_id="counter", session_id="s1", state=SessionState(custom=n + 1))

    async def run() -> None:
        with _make(kind, where) as store:
            for _ in range(ROUNDS):
                await store.save_snapshot("counter", bump)

    barrier.wait()
    anyio.run(run)
    queue.put("done")


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_two_processes_read_modify_write_without_lost_updates(kind: str, tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_count_worker, args=(kind, str(tmp_path), barrier, queue)) for _ in range(2)]
    for p in procs:
        p.start()
    assert [queue.get(timeout=120) for _ in procs] == ["done", "done"]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    with _make(kind, str(tmp_path)) as store:
        got = anyio.run(store.get_snapshot, "counter")
    assert got is not None and got.state is not None and got.state.custom == 2 * ROUNDS


# -- SQLite: a turn stores what it adds --------------------------------------------
def _turn_messages(i: int) -> list[Message]:
    ask = (
        f"Turn {i}: please look up the balance of account ACC-{i:05d} and tell me whether it covers "
        "a transfer of $250 to my landlord before the first of next month."
    )
    answer = (
        f"The balance of ACC-{i:05d} is ${1000 + i}.00, which covers the $250 transfer you asked about "
        f"in turn {i}; shall I schedule it for the 28th?"
    )
    return [
        Message.model_validate({"role": "user", "content": [{"text": ask}]}),
        Message.model_validate({"role": "model", "content": [{"text": answer}], "metadata": {"turn": i}}),
    ]


def _disk_size(path: str) -> int:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    wal = path + "-wal"
    return os.path.getsize(path) + (os.path.getsize(wal) if os.path.exists(wal) else 0)


async def test_sqlite_storage_grows_with_each_turn_not_the_history(tmp_path: Path) -> None:
    path = str(tmp_path / "agents.db")
    store = SqliteSessionStore(path)
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
            store.close()
            sizes[i] = _disk_size(path)
    assert len(messages) == 1000
    avg_message = sum(len(m.to_json()) for m in messages) / len(messages)
    assert 180 < avg_message < 260
    per_turn = (sizes[500] - sizes[250]) / 250
    print(f"\nSQLite: {sizes[250]} B after 250 turns, {sizes[500]} B after 500; {per_turn:.0f} B per turn")
    assert sizes[500] < 3 * sizes[250]
    assert per_turn < 4 * 2 * avg_message  # a full copy would cost ~1000 messages a turn by now

    await check_long_session(store, SqliteSessionStore(path), messages)


async def check_long_session(store: Any, fresh: Any, messages: list[Message]) -> None:
    """After the 500-turn growth test: both the writing store and a fresh one (no
    cache: rebuilt from the chain) read every turn's history back exactly."""
    for store_ in (store, fresh):
        got = await store_.get_snapshot("turn-500")
        assert got is not None and got.state is not None
        assert [m.to_wire() for m in got.state.messages] == [m.to_wire() for m in messages]
        assert got.state.custom == {"turns": 500}
    mid = await fresh.get_snapshot("turn-137")
    assert mid is not None and mid.state is not None
    assert [m.to_wire() for m in mid.state.messages] == [m.to_wire() for m in messages[:274]]
    latest = await fresh.get_latest("long")
    assert latest is not None and latest.snapshot_id == "turn-500"
    store.close()
    fresh.close()


def _tails(path: str) -> dict[str, tuple[int, int]]:
    """Each row's base length and how many messages its own tail holds."""
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT id, base_len, tail FROM snapshots").fetchall()
    conn.close()
    return {decode_id(r[0]): (r[1] or 0, len(unpack_tail(r[2]))) for r in rows}


async def test_sqlite_delta_without_shared_objects(tmp_path: Path) -> None:
    """Equal copies (a state sent back by another process) still store only the new messages."""
    path = str(tmp_path / "agents.db")
    one, two = _turn_messages(1), _turn_messages(2)
    store = SqliteSessionStore(path)
    await put(store, snap("a", messages=one))
    other = SqliteSessionStore(path)
    copies = [Message.model_validate(m.to_wire()) for m in one]
    await put(other, snap("b", parent_id="a", messages=[*copies, *two]))
    changed = [copies[0], Message.model_validate({**copies[1].to_wire(), "metadata": {"turn": True}})]
    await put(other, snap("c", parent_id="a", messages=changed))
    assert _tails(path) == {"a": (0, 2), "b": (2, 2), "c": (1, 1)}
    with SqliteSessionStore(path) as fresh:
        got = await fresh.get_snapshot("c")
    assert got is not None and got.state is not None
    assert got.state.messages[1].metadata == {"turn": True}  # 1 == True, but not as JSON
    store.close()
    other.close()


async def test_sqlite_rewriting_a_base_row_keeps_its_children(tmp_path: Path) -> None:
    path = str(tmp_path / "agents.db")
    store = SqliteSessionStore(path)
    hist = [*_turn_messages(1), *_turn_messages(2)]
    await put(store, snap("p", messages=hist))
    await put(store, snap("c", parent_id="p", messages=[*hist, *_turn_messages(3)]))
    await put(store, snap("g", parent_id="c", messages=[*hist, *_turn_messages(3), *_turn_messages(4)]))
    await put(store, snap("p", messages=hist[:1]))  # p loses three messages
    with SqliteSessionStore(path) as fresh:
        for s in (store, fresh):
            c, g = await s.get_snapshot("c"), await s.get_snapshot("g")
            assert c is not None and c.state is not None and g is not None and g.state is not None
            assert [m.to_wire() for m in c.state.messages] == [
                m.to_wire() for m in [*hist, *_turn_messages(3)]
            ]
            assert len(g.state.messages) == 8 and g.state.messages[:6] == c.state.messages
    await put(store, SessionSnapshot(snapshot_id="p", session_id="s1", status="pending"))  # no state at all
    with SqliteSessionStore(path) as fresh:
        c = await fresh.get_snapshot("c")
    assert c is not None and c.state is not None and len(c.state.messages) == 6
    store.close()


@pytest.mark.parametrize("with_state", [True, False])
def test_a_detached_copy_is_equal_and_shares_nothing_a_caller_changes(with_state: bool) -> None:
    """What stores hand out and keep (`_delta.detached`): equal on the wire and in what was set,
    unknown fields kept, and its lists, its state and its unknown fields its own."""
    from nb_agents.stores._delta import detached

    wire = {"snapshotId": "a", "status": "completed", "someday": {"x": 1}}
    if with_state:
        wire["state"] = {"messages": [{"role": "user", "content": [{"text": "hi"}]}], "custom": {"n": 1}}
    original = SessionSnapshot.model_validate(wire)
    copy = detached(original)
    assert type(copy) is SessionSnapshot and copy is not original
    assert copy.to_wire() == original.to_wire() and copy == original
    assert copy.model_fields_set == original.model_fields_set
    copy.model_fields_set.add("error")
    assert copy.__pydantic_extra__ is not None and copy.__pydantic_extra__ == {"someday": {"x": 1}}
    copy.__pydantic_extra__["later"] = 2
    copy.status = "failed"
    if with_state:
        assert copy.state is not None and original.state is not None and copy.state is not original.state
        assert copy.state.model_fields_set == original.state.model_fields_set
        copy.state.messages.append(Message.model_validate({"role": "model", "content": [{"text": "x"}]}))
        copy.state.artifacts.append(original.state.messages[0])  # type: ignore[arg-type]
        copy.state.custom = {"n": 2}
    else:
        assert copy.state is None
    assert original.to_wire() == SessionSnapshot.model_validate(wire).to_wire()
    assert "error" not in original.model_fields_set and "later" not in (original.__pydantic_extra__ or {})
