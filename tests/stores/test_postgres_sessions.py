"""`PostgresSessionStore`'s sessions: agent and owner stored once per session, and a
database of schema version 1 (as commit d23f66c wrote it) migrated in place."""

from __future__ import annotations

from pathlib import Path

import pg
import pytest

from nb_agents.testing._store_samples import snap
from nb_agents.types import SessionSnapshot

from .test_sqlite import _approval_agent

if not pg.in_ci():
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[postgres]')")
import psycopg  # noqa: E402

from nb_agents.stores.postgres import PostgresSessionStore  # noqa: E402

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parent / "data"


async def test_a_row_reads_its_sessions_agent_and_owner(dsn: str) -> None:
    async with PostgresSessionStore(dsn) as store:
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
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT session_id, agent, owner FROM nb_agents_sessions").fetchall() == [
            ("s1", "bank", "ana")
        ]
        metas = [
            m for (m,) in conn.execute("SELECT meta FROM nb_agents_snapshots WHERE session_id IS NOT NULL")
        ]
        assert metas and not any('"agent"' in m or '"owner"' in m for m in metas)  # once, in the session


async def test_a_version_1_database_is_migrated_in_place(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute((DATA / "postgres_v1.sql").read_text())  # type: ignore[arg-type]
    async with PostgresSessionStore(dsn) as store:
        paused = await store.get_latest("acct-1")
        assert paused is not None and paused.finish_reason == "interrupted"
        assert (paused.agent, paused.owner) == ("bank", "ana")
        records = await store.audit("acct-1")
        assert [(r.answered_by, r.claimed_by) for r in records] == [("ana", None), ("ana", None)]
        first = records[0]
        claim = await store.claim_resume(first.snapshot_id, "another answer", "late")
        assert claim is not None and claim.child_id == first.child_id and claim.generation == 1
        [turn] = await _approval_agent(store).pending()
        assert turn.snapshot_id == paused.snapshot_id
        res = await turn.chat().resume(restart=[turn.interrupts[0].approve()], metadata={"answeredBy": "ana"})
        assert res.text == "done"
        done = await store.get_snapshot(res.snapshot_id)  # type: ignore[arg-type]
        assert done is not None and (done.agent, done.owner) == ("bank", "ana")
        assert len(await store.audit("acct-1")) == 3
    with psycopg.connect(dsn) as conn:
        version = conn.execute("SELECT value FROM nb_agents_meta WHERE key = 'schema_version'").fetchone()
        assert version == ("2",)
        sessions = conn.execute("SELECT session_id, agent, owner FROM nb_agents_sessions").fetchall()
        assert sessions == [("acct-1", "bank", "ana")]
        generations = {g for (g,) in conn.execute("SELECT generation FROM nb_agents_claims")}
        assert generations == {1}
    async with PostgresSessionStore(dsn) as again:  # version 2 now: opened as it is
        latest = await again.get_latest("acct-1")
        assert latest is not None and latest.snapshot_id == res.snapshot_id
