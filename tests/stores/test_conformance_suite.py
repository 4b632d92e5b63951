"""The store conformance suite (`nb_agents.testing.stores`) against every built-in store,
and against a store written the way a third party would: the protocol only."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pg

from nb_agents.errors import StaleClaimError
from nb_agents.stores import FileSessionStore, InMemorySessionStore, SqliteSessionStore
from nb_agents.stores.base import (
    HEARTBEAT_TIMEOUT,
    AuditRecord,
    Fence,
    ResumeClaim,
    SessionStore,
    SnapshotMutator,
    effective_status,
    pick_leaf,
)
from nb_agents.testing.stores import StoreConformance
from nb_agents.types import SessionSnapshot


class TestInMemoryStore(StoreConformance):
    def make_store(self, tmp_path: Path) -> SessionStore:
        return InMemorySessionStore()

    def make_store_with_heartbeat_timeout(self, tmp_path: Path, timeout: timedelta) -> SessionStore:
        return InMemorySessionStore(heartbeat_timeout=timeout)


class TestBoundedInMemoryStore(StoreConformance):
    """Bounds that no check reaches change nothing."""

    def make_store(self, tmp_path: Path) -> SessionStore:
        return InMemorySessionStore(max_sessions=1000, ttl=timedelta(hours=1))

    def make_store_with_heartbeat_timeout(self, tmp_path: Path, timeout: timedelta) -> SessionStore:
        return InMemorySessionStore(max_sessions=1000, ttl=3600, heartbeat_timeout=timeout)


class TestFileStore(StoreConformance):
    def make_store(self, tmp_path: Path) -> SessionStore:
        return FileSessionStore(tmp_path / "sessions")

    def make_store_with_heartbeat_timeout(self, tmp_path: Path, timeout: timedelta) -> SessionStore:
        return FileSessionStore(tmp_path / "sessions", heartbeat_timeout=timeout)


class TestSqliteStore(StoreConformance):
    def make_store(self, tmp_path: Path) -> SessionStore:
        return SqliteSessionStore(tmp_path / "agents.db")

    def make_store_with_heartbeat_timeout(self, tmp_path: Path, timeout: timedelta) -> SessionStore:
        return SqliteSessionStore(tmp_path / "agents.db", heartbeat_timeout=timeout.total_seconds())


class TestSqliteStoreSyncingEveryCommit(StoreConformance):
    """Writes that cannot run on the loop (their commits fsync) run in worker threads, in batches."""

    def make_store(self, tmp_path: Path) -> SessionStore:
        return SqliteSessionStore(tmp_path / "agents.db", synchronous="full")

    def make_store_with_heartbeat_timeout(self, tmp_path: Path, timeout: timedelta) -> SessionStore:
        return SqliteSessionStore(tmp_path / "agents.db", synchronous="full", heartbeat_timeout=timeout)


class TestPostgresStore(StoreConformance):
    def make_store(self, tmp_path: Path) -> SessionStore:
        dsn = pg.fresh_dsn()  # skips without PostgreSQL (fails under CI)
        from nb_agents.stores.postgres import PostgresSessionStore

        return PostgresSessionStore(dsn)

    def make_store_with_heartbeat_timeout(self, tmp_path: Path, timeout: timedelta) -> SessionStore:
        from nb_agents.stores.postgres import PostgresSessionStore

        return PostgresSessionStore(pg.fresh_dsn(), heartbeat_timeout=timeout)


class DictStore:
    """A third-party store: wire dicts under a lock, on the `SessionStore` protocol alone.

    It notices changes by polling its own rows, which `wait_changed` allows."""

    poll_interval = 0.01
    heartbeat_timeout = HEARTBEAT_TIMEOUT
    heartbeat_interval = HEARTBEAT_TIMEOUT / 2

    def __init__(self, heartbeat_timeout: timedelta = HEARTBEAT_TIMEOUT) -> None:
        self.heartbeat_timeout = heartbeat_timeout
        self.heartbeat_interval = heartbeat_timeout / 2
        self._rows: dict[str, dict[str, object]] = {}
        self._claims: dict[str, ResumeClaim] = {}
        self._audit: list[AuditRecord] = []
        self._rules: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def _read(self, snapshot_id: str) -> SessionSnapshot | None:
        raw = self._rows.get(snapshot_id)
        return SessionSnapshot.model_validate(raw) if raw is not None else None

    def _expired(self, snap: SessionSnapshot | None) -> SessionSnapshot | None:
        status = effective_status(snap, timeout=self.heartbeat_timeout) if snap is not None else None
        if snap is None or status == snap.status:
            return snap
        return snap.model_copy(update={"status": status})

    def _save(self, snapshot_id: str, mutator: SnapshotMutator) -> SessionSnapshot | None:
        current = self._read(snapshot_id)
        new = mutator(current)
        if new is None:
            return None
        keep = {"snapshot_id": snapshot_id}
        for field in ("session_id", "agent", "owner"):
            was = getattr(current, field) if current is not None else None
            keep[field] = was or getattr(new, field)
        new = new.model_copy(update=keep)
        self._rows[snapshot_id] = new.to_wire()
        return new

    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        with self._lock:
            return self._expired(self._read(snapshot_id))

    async def get_latest(self, session_id: str) -> SessionSnapshot | None:
        with self._lock:
            snaps = [s for s in map(self._read, self._rows) if s is not None and s.session_id == session_id]
            return self._expired(pick_leaf(snaps))

    async def save_snapshot(
        self,
        snapshot_id: str,
        mutator: SnapshotMutator,
        *,
        audit: Sequence[AuditRecord] = (),
        fence: Fence | None = None,
        add_rules: Sequence[dict[str, Any]] = (),
    ) -> SessionSnapshot | None:
        with self._lock:
            if fence is not None:
                claim = self._claims.get(fence.parent_id)
                if claim is None or (claim.child_id, claim.generation) != (fence.child_id, fence.generation):
                    now = (claim.child_id, claim.generation) if claim is not None else None
                    raise StaleClaimError.of(fence.parent_id, fence.child_id, fence.generation, now)
            new = self._save(snapshot_id, mutator)
            if new is not None:
                self._audit.extend(audit)
                rules = self._rules.setdefault(new.session_id or "", [])
                have = {r["id"] for r in rules}
                rules.extend(dict(r) for r in add_rules if r["id"] not in have)
            return new

    async def get_claim(self, snapshot_id: str) -> ResumeClaim | None:
        with self._lock:
            return self._claims.get(snapshot_id)

    async def get_rules(self, session_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._rules.get(session_id, [])]

    async def drop_rule(
        self, session_id: str, rule_id: str, *, audit: Sequence[AuditRecord] = ()
    ) -> dict[str, Any] | None:
        with self._lock:
            rules = self._rules.get(session_id, [])
            found = next((r for r in rules if r["id"] == rule_id), None)
            if found is not None:
                rules.remove(found)
                self._audit.extend(audit)
            return found

    async def claim_resume(
        self, snapshot_id: str, digest: str, child_id: str, *, pending: SessionSnapshot | None = None
    ) -> ResumeClaim | None:
        with self._lock:
            if snapshot_id in self._claims:
                return self._claims[snapshot_id]
            self._claims[snapshot_id] = ResumeClaim(digest, child_id)
            if pending is not None:
                self._save(child_id, lambda cur: pending if cur is None else None)
            return None

    async def replace_claim(
        self,
        snapshot_id: str,
        expected: ResumeClaim,
        digest: str,
        child_id: str,
        *,
        pending: SessionSnapshot | None = None,
    ) -> ResumeClaim | None:
        with self._lock:
            current = self._claims.get(snapshot_id)
            if current is not None and (current.child_id, current.generation) != (
                expected.child_id,
                expected.generation,
            ):
                return current
            self._claims[snapshot_id] = ResumeClaim(digest, child_id, expected.generation + 1)
            if pending is not None:
                self._save(child_id, lambda cur: pending if cur is None else None)
            return None

    async def release_claim(self, snapshot_id: str, child_id: str) -> None:
        with self._lock:
            if snapshot_id in self._claims and self._claims[snapshot_id].child_id == child_id:
                del self._claims[snapshot_id]

    async def wait_changed(self, snapshot_id: str, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        with self._lock:
            seen = self._rows.get(snapshot_id)
        if seen is not None and seen.get("status") != "pending":
            return
        while loop.time() < deadline:
            await asyncio.sleep(min(self.poll_interval, max(0.0, deadline - loop.time())))
            with self._lock:
                if self._rows.get(snapshot_id) is not seen:
                    return

    async def session_ids(self) -> list[str]:
        with self._lock:
            sessions = (s.session_id for s in map(self._read, self._rows) if s is not None)
            return list(dict.fromkeys(sid for sid in sessions if sid))

    async def add_audit(self, records: Sequence[AuditRecord]) -> None:
        with self._lock:
            self._audit.extend(records)

    async def audit(self, session_id: str) -> list[AuditRecord]:
        with self._lock:
            return [r for r in self._audit if r.session_id == session_id]


class TestAThirdPartyStore(StoreConformance):
    async def make_store(self, tmp_path: Path) -> SessionStore:  # a coroutine is fine too
        return DictStore()

    def make_store_with_heartbeat_timeout(self, tmp_path: Path, timeout: timedelta) -> SessionStore:
        return DictStore(timeout)


def test_every_check_runs_on_every_store() -> None:
    checks = sorted(name for name in dir(StoreConformance) if name.startswith("test_"))
    assert len(checks) >= 38
    classes = (
        TestInMemoryStore,
        TestBoundedInMemoryStore,
        TestFileStore,
        TestSqliteStore,
        TestPostgresStore,
        TestAThirdPartyStore,
    )
    for cls in classes:
        assert issubclass(cls, StoreConformance)
        assert all(getattr(cls, name) is getattr(StoreConformance, name) for name in checks)


def test_importing_the_package_and_testing_does_not_import_pytest() -> None:
    code = (
        "import sys, nb_agents, nb_agents.testing\n"
        "from nb_agents.testing import FunctionModel, ScriptedModel\n"
        "assert 'pytest' not in sys.modules and 'nb_agents.testing.stores' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
