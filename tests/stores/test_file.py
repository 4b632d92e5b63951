"""What only `FileSessionStore` promises: a turn writes what it adds (its own messages, a
line in the session's index), any sequence of writes reads back as the in-memory store
keeps it, a store written in the old layout (whole histories, whole-file indexes) reads
and goes on, and a line a crash left half-written is skipped."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from nb_agents.stores._file_layout import fname
from nb_agents.stores.base import AuditRecord, ResumeClaim
from nb_agents.stores.file import FileSessionStore
from nb_agents.stores.memory import InMemorySessionStore
from nb_agents.testing._store_samples import msg, put, snap, ts
from nb_agents.types import SessionSnapshot, SessionState

from .test_sqlite import IDS, SESSIONS, _random_snapshot
from .test_stores import _turn_messages, check_long_session

pytestmark = pytest.mark.anyio


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _file(store_dir: Path, kind: str, key: str, suffix: str = ".json") -> Path:
    return store_dir / kind / fname(key, suffix)


async def test_file_storage_grows_with_each_turn_not_the_history(tmp_path: Path) -> None:
    where = tmp_path / "store"
    store = FileSessionStore(where)
    messages = []
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
            sizes[i] = _dir_size(where)
    avg_message = sum(len(m.to_json()) for m in messages) / len(messages)
    per_turn = (sizes[500] - sizes[250]) / 250
    print(f"\nFiles: {sizes[250]} B after 250 turns, {sizes[500]} B after 500; {per_turn:.0f} B per turn")
    assert sizes[500] < 3 * sizes[250]
    assert per_turn < 4 * 2 * avg_message  # a full copy would cost ~1000 messages a turn by now
    last = json.loads(_file(where, "snapshots", "turn-500").read_text(encoding="utf-8"))
    assert len(last["state"]["messages"]) == 2  # still readable JSON: its turn's messages
    assert last["$stored"] == {"rev": 1, "base": "turn-499", "baseRev": 1, "baseLength": 998}
    index = _file(where, "sessions", "long", ".jsonl").read_text(encoding="utf-8").splitlines()
    assert len(index) == 501 and json.loads(index[0]) == {"sessionId": "long"}

    await check_long_session(store, FileSessionStore(where), messages)


@pytest.mark.parametrize("seed", range(4))
async def test_any_sequence_of_writes_reads_as_in_memory(tmp_path: Path, seed: int) -> None:
    """Rows written in any order (children before their parents, rewrites that move a row,
    drop messages or the state) read back as the in-memory store keeps them."""
    rng = random.Random(seed)
    store, memory = FileSessionStore(tmp_path / "store"), InMemorySessionStore()

    async def same(files: FileSessionStore) -> None:
        for snapshot_id in [*IDS, "never-saved"]:
            got, want = await files.get_snapshot(snapshot_id), await memory.get_snapshot(snapshot_id)
            assert (got.to_wire() if got else None) == (want.to_wire() if want else None), snapshot_id
        for session_id in SESSIONS:
            if session_id is not None:
                got, want = await files.get_latest(session_id), await memory.get_latest(session_id)
                assert (got.to_wire() if got else None) == (want.to_wire() if want else None), session_id
        assert set(await files.session_ids()) == set(await memory.session_ids())

    for step in range(120):
        row = await _random_snapshot(rng, memory, step)
        for s in (store, memory):
            await s.save_snapshot(row.snapshot_id, lambda cur, row=row: row)
        if step % 40 == 39:
            await same(store)
    await same(store)
    await same(FileSessionStore(tmp_path / "store"))  # nothing cached: every history from its chain


async def test_rewriting_a_base_row_keeps_its_children(tmp_path: Path) -> None:
    where = tmp_path / "store"
    store = FileSessionStore(where)
    hist = [*_turn_messages(1), *_turn_messages(2)]
    await put(store, snap("p", messages=hist))
    await put(store, snap("c", parent_id="p", messages=[*hist, *_turn_messages(3)]))
    await put(store, snap("g", parent_id="c", messages=[*hist, *_turn_messages(3), *_turn_messages(4)]))
    await put(store, snap("p", messages=hist[:1]))  # p loses three messages
    child = json.loads(_file(where, "snapshots", "c").read_text(encoding="utf-8"))
    assert child["$stored"] == {"rev": 2, "base": "p", "baseRev": 2, "baseLength": 1}  # given them back
    for s in (store, FileSessionStore(where)):
        c, g = await s.get_snapshot("c"), await s.get_snapshot("g")
        assert c is not None and c.state is not None and g is not None and g.state is not None
        assert [m.to_wire() for m in c.state.messages] == [m.to_wire() for m in [*hist, *_turn_messages(3)]]
        assert len(g.state.messages) == 8 and g.state.messages[:6] == c.state.messages
    await put(store, SessionSnapshot(snapshot_id="p", session_id="s1", status="pending"))  # no state at all
    c = await FileSessionStore(where).get_snapshot("c")
    assert c is not None and c.state is not None and len(c.state.messages) == 6


def _write_old_layout(where: Path) -> tuple[SessionSnapshot, SessionSnapshot, AuditRecord]:
    """A store as nb_agents wrote it before logs: whole histories, whole-file index and audit."""
    one = snap("one", session_id="old", messages=[msg("user", "hi"), msg("model", "hello")])
    two = snap(
        "two",
        session_id="old",
        parent_id="one",
        created=1,
        messages=[*one.state.messages, msg("user", "more")],
    )  # type: ignore[union-attr]
    record = AuditRecord(
        "old", "one", "two", "transfer", "t1", "restart", {"toolApproved": True}, None, ts(1), "ana"
    )
    for kind, key, value in (
        ("snapshots", "one", one.to_wire()),
        ("snapshots", "two", two.to_wire()),
        (
            "sessions",
            "old",
            {
                "sessionId": "old",
                "snapshots": [
                    {"snapshotId": "one", "createdAt": ts(0)},
                    {"snapshotId": "two", "parentId": "one", "createdAt": ts(1)},
                ],
            },
        ),
        ("claims", "one", {"snapshotId": "one", "digest": "d1", "childId": "two"}),
        ("audit", "old", {"sessionId": "old", "records": [record.to_dict()]}),
    ):
        path = _file(where, kind, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=2), encoding="utf-8")
    return one, two, record


async def test_a_store_of_the_old_layout_reads_and_goes_on(tmp_path: Path) -> None:
    where = tmp_path / "store"
    one, two, record = _write_old_layout(where)
    store = FileSessionStore(where)
    for row in (one, two):
        got = await store.get_snapshot(row.snapshot_id)
        assert got is not None and got.to_wire() == row.to_wire()
    latest = await store.get_latest("old")
    assert latest is not None and latest.snapshot_id == "two"
    assert await store.session_ids() == ["old"]
    assert await store.audit("old") == [record]
    assert await store.claim_resume("one", "d2", "x") == ResumeClaim("d1", "two", 1)
    three = snap(
        "three",
        session_id="old",
        parent_id="two",
        created=2,
        messages=[*two.state.messages, msg("model", "ok")],
    )  # type: ignore[union-attr]
    later = AuditRecord("old", "two", "three", "transfer", "t2", "respond", 1, None, ts(2), "bo", "bob")
    await store.save_snapshot("three", lambda cur: three, audit=[later])
    stored = json.loads(_file(where, "snapshots", "three").read_text(encoding="utf-8"))
    assert len(stored["state"]["messages"]) == 1 and stored["$stored"]["base"] == "two"
    for s in (store, FileSessionStore(where)):
        got = await s.get_snapshot("three")
        assert got is not None and got.to_wire() == three.to_wire()
        latest = await s.get_latest("old")
        assert latest is not None and latest.snapshot_id == "three"
        assert await s.audit("old") == [record, later]
        assert await s.session_ids() == ["old"]


async def test_a_half_written_log_line_is_skipped(tmp_path: Path) -> None:
    """A crash in the middle of an append leaves a line without its end: it is not read,
    and the next append starts on a line of its own."""
    where = tmp_path / "store"
    store = FileSessionStore(where)
    await put(store, snap("a"))
    log = _file(where, "sessions", "s1", ".jsonl")
    with open(log, "ab") as fh:
        fh.write(b'{"snapshotId": "torn", "parentId": "a", "crea')
    fresh = FileSessionStore(where)
    latest = await fresh.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "a"
    await put(fresh, snap("b", parent_id="a", created=1))
    for s in (fresh, FileSessionStore(where)):
        latest = await s.get_latest("s1")
        assert latest is not None and latest.snapshot_id == "b"
    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b"" and b'"snapshotId":"b"' in lines[-2]


async def test_another_process_s_lines_are_read_as_the_index_grows(tmp_path: Path) -> None:
    """Two stores on one directory (as two processes): each reads what the other appended."""
    where = tmp_path / "store"
    first, second = FileSessionStore(where), FileSessionStore(where)
    await put(first, snap("a"))
    assert (await second.get_latest("s1")).snapshot_id == "a"  # type: ignore[union-attr]
    await put(second, snap("b", parent_id="a", created=1, messages=[msg("user", "hi"), msg("model", "x")]))
    assert (await first.get_latest("s1")).snapshot_id == "b"  # type: ignore[union-attr]
    await put(
        first,
        snap(
            "c", parent_id="b", created=2, messages=[msg("user", "hi"), msg("model", "x"), msg("user", "y")]
        ),
    )
    got = await second.get_snapshot("c")
    assert got is not None and [m.text for m in got.state.messages] == ["hi", "x", "y"]  # type: ignore[union-attr]
    assert os.path.exists(_file(where, "sessions", "s1", ".jsonl"))
