"""`FileSessionStore`: snapshots as readable JSON files in one directory.

This module owns the on-disk layout. Every file name is `_fname(id)`: the id
with unsafe characters replaced, cut short, plus a hash of the exact id, so any
session or snapshot id string is a safe, distinct name (also on case-insensitive
file systems)::

    <dir>/snapshots/<snapshot>.json   one pretty-printed SessionSnapshot per file
    <dir>/sessions/<session>.json     the session's index: each snapshot's id, parent, createdAt
    <dir>/claims/<snapshot>.json      the resume claim of an interrupted snapshot
    <dir>/audit/<session>.json        the session's audit records, oldest first
    <dir>/.lock                       the cross-process lock

A file is written whole to a temporary file and moved into place with
`os.replace`, so a reader never sees half of one. Read-modify-writes hold an
exclusive `fcntl.flock` on ``.lock`` (between processes) and a threading lock;
reads of several files hold a shared flock. A save with audit records, and a
claim with its pending row, write their files under one exclusive lock, so no
other write comes between them (a crash between the two files can lose the
second). Each snapshot stores its whole
state: this store is the simple, inspectable one (use `SqliteSessionStore` for
long conversations).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
from pydantic import BaseModel

from ..types import SessionSnapshot
from .base import (
    AuditRecord,
    ResumeClaim,
    SnapshotMutator,
    apply_mutator,
    pending_mutator,
    pick_leaf,
    with_effective_status,
)

if sys.platform != "win32":
    import fcntl

__all__ = ["FileSessionStore"]

T = TypeVar("T")

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _fname(key: str) -> str:
    """A file name for any id: readable, bounded, and distinct per exact string."""
    readable = _UNSAFE.sub("_", key).lstrip(".")[:48]
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{readable}-{digest}.json" if readable else f"{digest}.json"


def _read_json(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return json.loads(data.decode("utf-8", "surrogatepass"))


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8", "surrogatepass")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return str(value)


def _audit_by_session(records: Sequence[AuditRecord]) -> dict[str, list[dict[str, Any]]]:
    """Records as the JSON they are stored as, by session."""
    by_session: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        # through JSON now, so a value JSON cannot hold fails here, before any write
        data = json.loads(json.dumps(rec.to_dict(), default=_jsonable))
        by_session.setdefault(rec.session_id, []).append(data)
    return by_session


class FileSessionStore:
    """A session store of plain JSON files, one per snapshot, that you can read and diff.

    Safe to share between threads, event loops and processes on one machine
    (on POSIX; on Windows only between threads of one process). Every snapshot
    holds its whole history, so prefer `SqliteSessionStore` for long sessions.

    Args:
        directory: Where the files live; created if missing.

    Example:
        >>> import tempfile
        >>> store = FileSessionStore(tempfile.mkdtemp())
    """

    poll_interval = 0.1

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_path = self.directory / ".lock"
        self._thread_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FileSessionStore({str(self.directory)!r})"

    def _snapshot_path(self, snapshot_id: str) -> Path:
        return self.directory / "snapshots" / _fname(snapshot_id)

    def _index_path(self, session_id: str) -> Path:
        return self.directory / "sessions" / _fname(session_id)

    # -- the protocol -----------------------------------------------------------
    async def get_snapshot(self, snapshot_id: str) -> SessionSnapshot | None:
        return with_effective_status(await self._run(lambda: self._load(snapshot_id)))

    async def get_latest(self, session_id: str) -> SessionSnapshot | None:
        def latest() -> SessionSnapshot | None:
            with self._locked(exclusive=False):
                index = _read_json(self._index_path(session_id)) or {}
                entries = [SessionSnapshot.model_validate(e) for e in index.get("snapshots", [])]
                leaf = pick_leaf(entries)
                return self._load(leaf.snapshot_id) if leaf is not None else None

        return with_effective_status(await self._run(latest))

    async def save_snapshot(
        self, snapshot_id: str, mutator: SnapshotMutator, *, audit: Sequence[AuditRecord] = ()
    ) -> SessionSnapshot | None:
        by_session = _audit_by_session(audit)

        def save() -> SessionSnapshot | None:
            with self._locked(exclusive=True):
                new = self._save(snapshot_id, mutator)
                if new is not None:
                    self._append_audit(by_session)
                return new

        return await self._run(save)

    async def claim_resume(
        self, snapshot_id: str, digest: str, child_id: str, *, pending: SessionSnapshot | None = None
    ) -> ResumeClaim | None:
        path = self.directory / "claims" / _fname(snapshot_id)

        def claim() -> ResumeClaim | None:
            with self._locked(exclusive=True):
                existing = _read_json(path)
                if existing is not None:
                    return ResumeClaim(existing["digest"], existing["childId"])
                _write_json(path, {"snapshotId": snapshot_id, "digest": digest, "childId": child_id})
                if pending is not None:
                    self._save(child_id, pending_mutator(pending))
                return None

        return await self._run(claim)

    async def release_claim(self, snapshot_id: str, child_id: str) -> None:
        path = self.directory / "claims" / _fname(snapshot_id)

        def release() -> None:
            with self._locked(exclusive=True):
                existing = _read_json(path)
                if existing is not None and existing.get("childId") == child_id:
                    path.unlink()

        await self._run(release)

    async def session_ids(self) -> list[str]:
        def ids() -> list[str]:
            found: list[tuple[str, str]] = []
            with self._locked(exclusive=False):
                for path in (self.directory / "sessions").glob("*.json"):
                    index = _read_json(path)
                    if index and index.get("snapshots"):
                        first = min(e.get("createdAt") or "" for e in index["snapshots"])
                        found.append((first, index["sessionId"]))
            return [session_id for _, session_id in sorted(found)]

        return await self._run(ids)

    async def add_audit(self, records: Sequence[AuditRecord]) -> None:
        by_session = _audit_by_session(records)

        def add() -> None:
            with self._locked(exclusive=True):
                self._append_audit(by_session)

        if by_session:
            await self._run(add)

    async def audit(self, session_id: str) -> list[AuditRecord]:
        path = self.directory / "audit" / _fname(session_id)
        log = await self._run(lambda: _read_json(path))
        known = {f.name for f in fields(AuditRecord)}
        return [
            AuditRecord(**{k: v for k, v in data.items() if k in known})
            for data in (log or {}).get("records", [])
        ]

    # -- in a worker thread ---------------------------------------------------------
    def _load(self, snapshot_id: str) -> SessionSnapshot | None:
        raw = _read_json(self._snapshot_path(snapshot_id))
        return SessionSnapshot.model_validate(raw) if raw is not None else None

    def _save(self, snapshot_id: str, mutator: SnapshotMutator) -> SessionSnapshot | None:
        """Read-modify-write one snapshot file; the caller holds the exclusive lock."""
        current = self._load(snapshot_id)
        new = apply_mutator(snapshot_id, current, mutator)
        if new is None:
            return None
        _write_json(self._snapshot_path(snapshot_id), new.to_wire())
        if new.session_id:
            self._index(new)
        return new

    def _append_audit(self, by_session: dict[str, list[dict[str, Any]]]) -> None:
        """Append records to their sessions' logs; the caller holds the exclusive lock."""
        for session_id, new in by_session.items():
            path = self.directory / "audit" / _fname(session_id)
            log = _read_json(path) or {"sessionId": session_id, "records": []}
            log["records"].extend(new)
            _write_json(path, log)

    def _index(self, snap: SessionSnapshot) -> None:
        """Record the snapshot's lineage in its session's index (what `pick_leaf` needs)."""
        assert snap.session_id is not None
        path = self._index_path(snap.session_id)
        index = _read_json(path) or {"sessionId": snap.session_id, "snapshots": []}
        entry = {
            k: v
            for k, v in (
                ("snapshotId", snap.snapshot_id),
                ("parentId", snap.parent_id),
                ("createdAt", snap.created_at),
            )
            if v is not None
        }
        entries: list[dict[str, Any]] = index["snapshots"]
        for i, old in enumerate(entries):
            if old.get("snapshotId") == snap.snapshot_id:
                if old == entry:
                    return
                entries[i] = entry
                break
        else:
            entries.append(entry)
        _write_json(path, index)

    async def _run(self, fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn)

    @contextlib.contextmanager
    def _locked(self, *, exclusive: bool) -> Iterator[None]:
        thread_lock: contextlib.AbstractContextManager[Any] = (
            self._thread_lock if exclusive else contextlib.nullcontext()
        )
        with thread_lock, open(self._lock_path, "a+b") as fh:
            if sys.platform != "win32":
                # flock locks belong to the open file, so this also excludes other
                # threads of this process that opened the lock file themselves
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
