"""The session-store contract, run against every store; then what only SQLite promises."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from nb_agents.stores._sqlite_codec import decode_id, unpack_tail
from nb_agents.stores.base import AuditRecord, ResumeClaim, SessionStore
from nb_agents.stores.file import FileSessionStore
from nb_agents.stores.memory import InMemorySessionStore
from nb_agents.stores.sqlite import SqliteSessionStore
from nb_agents.types import AgentErrorInfo, Message, SessionSnapshot, SessionState

pytestmark = pytest.mark.anyio

KINDS = ["memory", "file", "sqlite"]


def _make(kind: str, where: str) -> Any:
    if kind == "memory":
        return InMemorySessionStore()
    if kind == "file":
        return FileSessionStore(where)
    return SqliteSessionStore(os.path.join(where, "agents.db"))


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    s = _make(request.param, str(tmp_path))
    yield s
    if isinstance(s, SqliteSessionStore):
        s.close()


def _ts(seconds: int) -> str:
    base = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    return base.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _msg(role: str, text: str) -> Message:
    return Message.model_validate({"role": role, "content": [{"text": text}]})


def _snap(
    snapshot_id: str,
    *,
    session_id: str = "s1",
    parent_id: str | None = None,
    created: int = 0,
    messages: list[Message] | None = None,
    **extra: Any,
) -> SessionSnapshot:
    return SessionSnapshot(
        snapshot_id=snapshot_id,
        session_id=session_id,
        parent_id=parent_id,
        created_at=_ts(created),
        updated_at=_ts(created),
        status="completed",
        finish_reason="stop",
        state=SessionState(session_id=session_id, messages=messages or [_msg("user", "hi")]),
        **extra,
    )


async def _put(store: SessionStore, snap: SessionSnapshot) -> None:
    await store.save_snapshot(snap.snapshot_id, lambda cur: snap)


RICH = {
    "snapshotId": "snap-1",
    "sessionId": "sess-1",
    "parentId": "snap-0",
    "createdAt": "2026-01-01T00:00:00.000Z",
    "updatedAt": "2026-01-01T00:00:01.000Z",
    "status": "completed",
    "finishReason": "interrupted",
    "futureField": {"kept": [1, 2.5, True, None]},
    "state": {
        "sessionId": "sess-1",
        "custom": {"count": 3, "nested": {"x": [1, "ünïcode ✓"]}},
        "artifacts": [{"name": "report", "parts": [{"text": "draft"}], "metadata": {"v": 1}}],
        "stateExtra": "kept too",
        "messages": [
            {"role": "user", "content": [{"text": "transfer $5"}]},
            {
                "role": "model",
                "content": [
                    {"text": "Let me check."},
                    {
                        "toolRequest": {"name": "userApproval", "ref": "b2", "input": {"amount": 5}},
                        "metadata": {"interrupt": {"why": "approve"}},
                    },
                ],
                "metadata": {"custom": 1},
                "messageExtra": True,
            },
        ],
    },
}


# -- the contract, for every store ----------------------------------------------------
async def test_round_trip_keeps_every_field(store: SessionStore) -> None:
    snap = SessionSnapshot.model_validate(RICH)
    written = await store.save_snapshot("snap-1", lambda cur: snap)
    assert written is not None and written.to_wire() == RICH
    got = await store.get_snapshot("snap-1")
    assert got is not None and got.to_wire() == RICH
    assert await store.get_snapshot("nope") is None


async def test_pending_and_failed_rows_round_trip(store: SessionStore) -> None:
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    pending = SessionSnapshot(
        snapshot_id="p", session_id="s1", created_at=now, updated_at=now, heartbeat_at=now, status="pending"
    )
    failed = _snap("f", created=1, error=AgentErrorInfo(status="INTERNAL", message="boom"))
    failed = failed.model_copy(update={"status": "failed", "finish_reason": "failed"})
    await _put(store, pending)
    await _put(store, failed)
    got_pending = await store.get_snapshot("p")
    got_failed = await store.get_snapshot("f")
    assert got_pending is not None and got_pending.state is None and got_pending.status == "pending"
    assert got_pending.to_wire() == pending.to_wire()
    assert got_failed is not None and got_failed.to_wire() == failed.to_wire()
    assert got_failed.error is not None and got_failed.error.message == "boom"


async def test_mutator_returning_none_writes_nothing(store: SessionStore) -> None:
    assert await store.save_snapshot("x", lambda cur: None) is None
    assert await store.get_snapshot("x") is None
    assert await store.session_ids() == []
    await _put(store, _snap("x"))
    assert await store.save_snapshot("x", lambda cur: None) is None
    got = await store.get_snapshot("x")
    assert got is not None and got.to_wire() == _snap("x").to_wire()


async def test_mutator_sees_the_current_row(store: SessionStore) -> None:
    seen: list[SessionSnapshot | None] = []

    def bump(cur: SessionSnapshot | None) -> SessionSnapshot:
        seen.append(cur)
        count = 0 if cur is None or cur.state is None else cur.state.custom["n"] + 1
        state = SessionState(session_id="s1", messages=[_msg("user", "hi")], custom={"n": count})
        return SessionSnapshot(snapshot_id="x", session_id="s1", status="completed", state=state)

    first = await store.save_snapshot("x", bump)
    second = await store.save_snapshot("x", bump)
    assert seen[0] is None
    assert seen[1] is not None and first is not None and seen[1].to_wire() == first.to_wire()
    assert second is not None and second.state is not None and second.state.custom == {"n": 1}
    got = await store.get_snapshot("x")
    assert got is not None and got.state is not None and got.state.custom == {"n": 1}


async def test_store_owns_the_id_and_keeps_the_session(store: SessionStore) -> None:
    await _put(store, _snap("x", session_id="s1"))
    written = await store.save_snapshot("x", lambda cur: _snap("other", session_id="s2"))
    assert written is not None and written.snapshot_id == "x" and written.session_id == "s1"
    got = await store.get_snapshot("x")
    assert got is not None and got.session_id == "s1"
    assert await store.get_snapshot("other") is None
    assert await store.session_ids() == ["s1"]


async def test_concurrent_read_modify_writes_lose_nothing(store: SessionStore) -> None:
    def bump(cur: SessionSnapshot | None) -> SessionSnapshot:
        n = 0 if cur is None or cur.state is None else cur.state.custom
        return SessionSnapshot(snapshot_id="c", session_id="s1", state=SessionState(custom=n + 1))

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(store.save_snapshot, "c", bump)
    got = await store.get_snapshot("c")
    assert got is not None and got.state is not None and got.state.custom == 20


async def test_latest_is_the_newest_leaf(store: SessionStore) -> None:
    await _put(store, _snap("root", created=0))
    await _put(store, _snap("a", parent_id="root", created=10))
    await _put(store, _snap("b", parent_id="root", created=5))
    await _put(store, _snap("other-session", session_id="s2", created=99))
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "a"  # two leaves: the newer wins
    await _put(store, _snap("b1", parent_id="b", created=7))
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "a"  # b1 is a leaf but older than a
    await _put(store, _snap("a1", parent_id="a", created=6))
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "b1"  # a is no longer a leaf
    assert await store.get_latest("unknown") is None
    # a child in another session does not make its parent a non-leaf of this one
    await _put(store, _snap("fork", session_id="s3", parent_id="b1", created=50))
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "b1"


async def test_latest_breaks_created_at_ties_by_id(store: SessionStore) -> None:
    await _put(store, _snap("m", created=3))
    await _put(store, _snap("z", created=3))
    await _put(store, _snap("k", created=3))
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "z"


async def test_session_ids(store: SessionStore) -> None:
    await _put(store, _snap("a", session_id="first", created=0))
    await _put(store, _snap("b", session_id="second", created=1))
    await _put(store, _snap("c", session_id="first", parent_id="a", created=2))
    assert await store.session_ids() == ["first", "second"]


async def test_claim_resume_first_wins(store: SessionStore) -> None:
    assert await store.claim_resume("snap", "digest-1", "child-1") is None
    assert await store.claim_resume("snap", "digest-1", "child-2") == ResumeClaim("digest-1", "child-1")
    assert await store.claim_resume("snap", "digest-2", "child-3") == ResumeClaim("digest-1", "child-1")
    assert await store.claim_resume("other", "digest-2", "child-4") is None


async def test_concurrent_claims_have_one_winner(store: SessionStore) -> None:
    results: dict[str, ResumeClaim | None] = {}

    async def claim(i: int) -> None:
        results[f"child-{i}"] = await store.claim_resume("snap", f"d{i}", f"child-{i}")

    async with anyio.create_task_group() as tg:
        for i in range(12):
            tg.start_soon(claim, i)
    winners = [child for child, res in results.items() if res is None]
    assert len(winners) == 1
    assert {res for res in results.values() if res is not None} == {
        ResumeClaim(f"d{winners[0].split('-')[1]}", winners[0])
    }


async def test_release_claim(store: SessionStore) -> None:
    assert await store.claim_resume("snap", "d1", "child-1") is None
    await store.release_claim("snap", "someone-else")  # not the claimant's: kept
    assert await store.claim_resume("snap", "d2", "child-2") == ResumeClaim("d1", "child-1")
    await store.release_claim("snap", "child-1")
    assert await store.claim_resume("snap", "d2", "child-2") is None
    await store.release_claim("never-claimed", "x")  # a no-op


async def test_audit_is_kept_in_order(store: SessionStore) -> None:
    def rec(i: int, session_id: str = "s1", **kw: Any) -> AuditRecord:
        return AuditRecord(
            session_id,
            f"snap-{i}",
            f"child-{i}",
            "userApproval",
            f"ref{i}",
            "respond",
            {"ok": i},
            None,
            _ts(i),
            **kw,
        )

    await store.add_audit([rec(1), rec(2, answered_by="ann")])
    await store.add_audit([rec(3, session_id="s2")])
    await store.add_audit([])
    await store.add_audit(
        [
            AuditRecord("s1", "snap-4", "child-4", "transfer", None, "restart", None, {"to": "bob"}, _ts(4)),
            rec(5),
        ]
    )
    got = await store.audit("s1")
    assert [r.snapshot_id for r in got] == ["snap-1", "snap-2", "snap-4", "snap-5"]
    assert got[0] == rec(1)
    assert got[1].answered_by == "ann" and got[1].answer == {"ok": 2}
    assert got[2].kind == "restart" and got[2].replaced_input == {"to": "bob"} and got[2].ref is None
    assert await store.audit("s2") == [rec(3, session_id="s2")]
    assert await store.audit("nobody") == []


def _answer(i: int, session_id: str = "s1", snapshot_id: str = "root", child_id: str = "kid") -> AuditRecord:
    return AuditRecord(
        session_id, snapshot_id, child_id, "transfer", f"t{i}", "restart", {"ok": i}, None, _ts(i)
    )


async def test_a_save_appends_its_audit_records_with_the_row(store: SessionStore) -> None:
    await _put(store, _snap("root"))
    await store.add_audit([_answer(1, child_id="earlier")])
    kid = _snap("kid", parent_id="root", created=1)
    written = await store.save_snapshot("kid", lambda cur: kid, audit=[_answer(2), _answer(3)])
    assert written is not None and written.to_wire() == kid.to_wire()
    # a save that writes nothing appends nothing
    assert await store.save_snapshot("kid", lambda cur: None, audit=[_answer(4)]) is None
    # records about other snapshots and sessions are kept as given
    other = _answer(5, session_id="s2", snapshot_id="elsewhere", child_id="nowhere")
    await store.save_snapshot("kid", lambda cur: kid, audit=[other])
    assert await store.audit("s1") == [_answer(1, child_id="earlier"), _answer(2), _answer(3)]
    assert await store.audit("s2") == [other]
    got = await store.get_snapshot("kid")
    assert got is not None and got.to_wire() == kid.to_wire()


async def test_a_winning_claim_writes_the_pending_row(store: SessionStore) -> None:
    await _put(store, _snap("root"))
    pending = SessionSnapshot(
        snapshot_id="ignored", session_id="s1", parent_id="root", created_at=_ts(1), status="pending"
    )
    assert await store.claim_resume("root", "d1", "kid", pending=pending) is None
    got = await store.get_snapshot("kid")  # the store owns the id
    assert got is not None and got.to_wire() == {**pending.to_wire(), "snapshotId": "kid"}
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "kid"
    # a lost claim writes nothing
    other = pending.model_copy(update={"snapshot_id": "kid2"})
    assert await store.claim_resume("root", "d2", "kid2", pending=other) == ResumeClaim("d1", "kid")
    assert await store.get_snapshot("kid2") is None
    # a won claim keeps a row that exists
    await _put(store, _snap("root2", created=2))
    await _put(store, _snap("done", parent_id="root2", created=3))
    assert await store.claim_resume("root2", "d3", "done", pending=pending) is None
    got = await store.get_snapshot("done")
    assert got is not None and got.to_wire() == _snap("done", parent_id="root2", created=3).to_wire()


async def test_a_claim_made_before_its_snapshot_was_saved(store: SessionStore) -> None:
    assert await store.claim_resume("later", "d1", "kid") is None
    await _put(store, _snap("later"))
    await _put(store, _snap("kid", parent_id="later", created=1))
    assert await store.claim_resume("later", "d2", "kid2") == ResumeClaim("d1", "kid")
    await store.release_claim("later", "kid")
    assert await store.claim_resume("later", "d2", "kid2") is None
    assert await store.claim_resume("later", "d3", "kid3") == ResumeClaim("d2", "kid2")


async def test_stale_pending_row_reads_expired(store: SessionStore) -> None:
    old = (datetime.now(UTC) - timedelta(seconds=75)).isoformat().replace("+00:00", "Z")
    fresh = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    stale = SessionSnapshot(
        snapshot_id="p", session_id="s1", created_at=old, heartbeat_at=old, status="pending"
    )
    await _put(store, stale)
    got = await store.get_snapshot("p")
    assert got is not None and got.status == "expired"
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "p" and latest.status == "expired"
    # what is stored is still pending: a fresh heartbeat makes it read pending again
    seen: list[str | None] = []

    def beat(cur: SessionSnapshot | None) -> SessionSnapshot | None:
        seen.append(cur.status if cur else None)
        return cur.model_copy(update={"heartbeat_at": fresh}) if cur else None

    await store.save_snapshot("p", beat)
    assert seen == ["pending"]
    got = await store.get_snapshot("p")
    assert got is not None and got.status == "pending"


async def test_detached_row_settles_in_place(store: SessionStore) -> None:
    """A pending row (no state) is rewritten by the turn's final write, as a detached turn does."""
    history = [_msg("user", "one"), _msg("model", "two")]
    await _put(store, _snap("root", messages=history))
    pending = SessionSnapshot(snapshot_id="p", session_id="s1", parent_id="root", status="pending")
    await _put(store, pending)
    final = _snap(
        "p", parent_id="root", created=1, messages=[*history, _msg("user", "3"), _msg("model", "4")]
    )
    seen: list[SessionSnapshot | None] = []

    def settle(cur: SessionSnapshot | None) -> SessionSnapshot:
        seen.append(cur)
        return final

    await store.save_snapshot("p", settle)
    assert seen[0] is not None and seen[0].to_wire() == pending.to_wire()
    got = await store.get_snapshot("p")
    assert got is not None and got.to_wire() == final.to_wire()
    latest = await store.get_latest("s1")
    assert latest is not None and latest.snapshot_id == "p"


async def test_unusual_values_round_trip(store: SessionStore) -> None:
    odd = 'lone \ud800 surrogate, NUL \x00, emoji 😀, quote " and backslash \\'
    snap = SessionSnapshot.model_validate(
        {
            "snapshotId": "odd",
            "sessionId": "s1",
            "status": "completed",
            "state": {"custom": {"text": odd, "n": [1, 1.5, True, None]}},  # messages never set
        }
    )
    await _put(store, snap)
    child = _snap("kid", parent_id="odd", messages=[_msg("user", odd)])
    await _put(store, child)
    got, kid = await store.get_snapshot("odd"), await store.get_snapshot("kid")
    assert got is not None and got.to_wire() == snap.to_wire()
    assert "messages" not in got.to_wire()["state"]
    assert kid is not None and kid.to_wire() == child.to_wire()


# -- persistent stores ------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_persists_across_store_instances(kind: str, tmp_path: Path) -> None:
    first = _make(kind, str(tmp_path))
    snap = SessionSnapshot.model_validate(RICH)
    await _put(first, snap)
    await first.claim_resume("snap-1", "d", "child")
    await first.add_audit([AuditRecord("sess-1", "snap-1", "child", "t", "r", "respond", 1, None, _ts(0))])
    second = _make(kind, str(tmp_path))
    got = await second.get_snapshot("snap-1")
    assert got is not None and got.to_wire() == RICH
    latest = await second.get_latest("sess-1")
    assert latest is not None and latest.to_wire() == RICH
    assert await second.session_ids() == ["sess-1"]
    assert await second.claim_resume("snap-1", "d2", "c2") == ResumeClaim("d", "child")
    assert [r.answer for r in await second.audit("sess-1")] == [1]
    for s in (first, second):
        if isinstance(s, SqliteSessionStore):
            s.close()


def test_store_works_from_several_event_loops_and_threads(tmp_path: Path) -> None:
    for s in (_make("file", str(tmp_path / "f")), _make("sqlite", str(tmp_path))):
        errors: list[BaseException] = []

        def worker(i: int, s: Any = s) -> None:
            try:
                asyncio.run(_put(s, _snap(f"t{i}", created=i)))
                got = asyncio.run(s.get_snapshot(f"t{i}"))
                assert got is not None and got.snapshot_id == f"t{i}"
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        latest = anyio.run(s.get_latest, "s1")
        assert latest is not None and latest.snapshot_id == "t5"


async def test_file_names_are_safe_for_any_id(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "store")
    weird = ["../../escape", "a/b\\c", "A", "a", "#", ".hidden", "ünï 😀", "x" * 500, "con"]
    for i, sid in enumerate(weird):
        await _put(store, _snap(f"{sid}#snap", session_id=sid, created=i))
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
    store = _make(kind, where)

    async def run() -> list[tuple[str, Any]]:
        out = []
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
    store = _make(kind, where)

    def bump(cur: SessionSnapshot | None) -> SessionSnapshot:
        n = 0 if cur is None or cur.state is None else cur.state.custom
        return SessionSnapshot(snapshot_id="counter", session_id="s1", state=SessionState(custom=n + 1))

    async def run() -> None:
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
    got = anyio.run(_make(kind, str(tmp_path)).get_snapshot, "counter")
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
        snap = SessionSnapshot(
            snapshot_id=f"turn-{i:03d}",
            session_id="long",
            parent_id=parent,
            created_at=_ts(i),
            updated_at=_ts(i),
            status="completed",
            finish_reason="stop",
            state=state,
        )
        await store.save_snapshot(snap.snapshot_id, lambda cur, snap=snap: snap)
        parent = snap.snapshot_id
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
    await _put(store, _snap("a", messages=one))
    other = SqliteSessionStore(path)
    copies = [Message.model_validate(m.to_wire()) for m in one]
    await _put(other, _snap("b", parent_id="a", messages=[*copies, *two]))
    changed = [copies[0], Message.model_validate({**copies[1].to_wire(), "metadata": {"turn": True}})]
    await _put(other, _snap("c", parent_id="a", messages=changed))
    assert _tails(path) == {"a": (0, 2), "b": (2, 2), "c": (1, 1)}
    got = await SqliteSessionStore(path).get_snapshot("c")
    assert got is not None and got.state is not None
    assert got.state.messages[1].metadata == {"turn": True}  # 1 == True, but not as JSON
    store.close()
    other.close()


async def test_sqlite_rewriting_a_base_row_keeps_its_children(tmp_path: Path) -> None:
    path = str(tmp_path / "agents.db")
    store = SqliteSessionStore(path)
    hist = [*_turn_messages(1), *_turn_messages(2)]
    await _put(store, _snap("p", messages=hist))
    await _put(store, _snap("c", parent_id="p", messages=[*hist, *_turn_messages(3)]))
    await _put(store, _snap("g", parent_id="c", messages=[*hist, *_turn_messages(3), *_turn_messages(4)]))
    await _put(store, _snap("p", messages=hist[:1]))  # p loses three messages
    for s in (store, SqliteSessionStore(path)):
        c, g = await s.get_snapshot("c"), await s.get_snapshot("g")
        assert c is not None and c.state is not None and g is not None and g.state is not None
        assert [m.to_wire() for m in c.state.messages] == [m.to_wire() for m in [*hist, *_turn_messages(3)]]
        assert len(g.state.messages) == 8 and g.state.messages[:6] == c.state.messages
    await _put(store, SessionSnapshot(snapshot_id="p", session_id="s1", status="pending"))  # no state at all
    c = await SqliteSessionStore(path).get_snapshot("c")
    assert c is not None and c.state is not None and len(c.state.messages) == 6
    store.close()
