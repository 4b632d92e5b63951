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
`os.replace`, so a reader never sees half of one. An operation is a
transaction of `_Files`: under an exclusive `fcntl.flock` on ``.lock``
(between processes) and a threading lock for a write, a shared flock for a
read. A write transaction encodes every file it writes first (a value JSON
cannot hold fails before anything is written) and moves them into place at
its end, so no other write comes between a save and its audit records, or a
claim and its pending row (a crash between two files can lose the second).
Each snapshot stores its whole state: this store is the simple, inspectable
one (use `SqliteSessionStore` for long conversations).
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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import fields
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import anyio.to_thread
from pydantic import BaseModel

from ..types import SessionSnapshot
from ._base import BaseSessionStore
from .base import AuditRecord, ResumeClaim, leaves

if sys.platform != "win32":
    import fcntl

__all__ = ["FileSessionStore"]

T = TypeVar("T")
P = ParamSpec("P")

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_AUDIT_FIELDS = frozenset(f.name for f in fields(AuditRecord))


def _fname(key: str) -> str:
    """A file name for any id: readable, bounded, and distinct per exact string."""
    readable = _UNSAFE.sub("_", key).lstrip(".")[:48]
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{readable}-{digest}.json" if readable else f"{digest}.json"


def _decode(data: bytes) -> Any:
    return json.loads(data.decode("utf-8", "surrogatepass"))


def _encode(value: Any) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"


def _read_json(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return _decode(data)


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
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


class FileSessionStore(BaseSessionStore["_Files"]):
    """A session store of plain JSON files, one per snapshot, that you can read and diff.

    Safe to share between threads, event loops and processes on one machine
    (on POSIX; on Windows only between threads of one process). Every snapshot
    holds its whole history, so prefer `SqliteSessionStore` for long sessions.

    Args:
        directory: Where the files live; created if missing.
        heartbeat_timeout: How old a running turn's heartbeat may be before its
            row reads ``expired`` and its claim may be taken over (seconds or a
            timedelta; 60 s by default). Every process sharing the store should
            use the same value.

    Example:
        >>> import tempfile
        >>> store = FileSessionStore(tempfile.mkdtemp())
    """

    poll_interval = 0.1

    def __init__(
        self, directory: str | os.PathLike[str], *, heartbeat_timeout: float | timedelta | None = None
    ) -> None:
        self._set_heartbeat(heartbeat_timeout)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_path = self.directory / ".lock"
        self._thread_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FileSessionStore({str(self.directory)!r})"

    async def _run(
        self, write: bool, fn: Callable[Concatenate[_Files, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        return await anyio.to_thread.run_sync(partial(self._transaction, write, fn, *args, **kwargs))

    def _transaction(
        self, write: bool, fn: Callable[Concatenate[_Files, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """In a worker thread: `fn` on a `_Files` under the lock, its writes moved into place at the end."""
        with self._locked(exclusive=write):
            files = _Files(self.directory)
            out = fn(files, *args, **kwargs)
            if write:
                files.commit()
            return out

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


class _Files:
    """One transaction on the directory, and the store's primitives (`StoreTransaction`).

    Reads see the transaction's own writes; `commit` moves them into place.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._writes: dict[Path, bytes | None] = {}  # None: delete the file

    # -- the primitives ---------------------------------------------------------------
    def get(self, snapshot_id: str) -> SessionSnapshot | None:
        raw = self._read(self._path("snapshots", snapshot_id))
        return SessionSnapshot.model_validate(raw) if raw is not None else None

    load = get

    def write(self, snapshot_id: str, current: SessionSnapshot | None, new: SessionSnapshot) -> None:
        self._write(self._path("snapshots", snapshot_id), new.to_wire())
        if new.session_id:
            self._index(new.session_id, new)

    def leaves(self, session_id: str) -> Iterable[tuple[str, str]]:
        index = self._read(self._path("sessions", session_id)) or {}
        return leaves(
            (e["snapshotId"], e.get("parentId"), e.get("createdAt")) for e in index.get("snapshots", [])
        )

    def session_ids(self) -> list[str]:
        found: list[tuple[str, str]] = []
        for path in (self.directory / "sessions").glob("*.json"):
            index = self._read(path)
            if index and index.get("snapshots"):
                first = min(e.get("createdAt") or "" for e in index["snapshots"])
                found.append((first, index["sessionId"]))
        return [session_id for _, session_id in sorted(found)]

    def find_claim(self, snapshot_id: str) -> ResumeClaim | None:
        found = self._read(self._path("claims", snapshot_id))
        if found is None:
            return None
        return ResumeClaim(found["digest"], found["childId"], int(found.get("generation", 1)))

    def add_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        value = {
            "snapshotId": snapshot_id,
            "digest": claim.digest,
            "childId": claim.child_id,
            "generation": claim.generation,
        }
        self._write(self._path("claims", snapshot_id), value)

    def drop_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        self._writes[self._path("claims", snapshot_id)] = None

    def add_audit(self, records: Sequence[AuditRecord]) -> None:
        by_session: dict[str, list[dict[str, Any]]] = {}
        for rec in records:
            # through JSON now, so a value JSON cannot hold fails here, before any write
            data = json.loads(json.dumps(rec.to_dict(), default=_jsonable))
            by_session.setdefault(rec.session_id, []).append(data)
        for session_id, new in by_session.items():
            path = self._path("audit", session_id)
            log = self._read(path) or {"sessionId": session_id, "records": []}
            log["records"].extend(new)
            self._write(path, log)

    def audit(self, session_id: str) -> list[AuditRecord]:
        log = self._read(self._path("audit", session_id)) or {}
        return [
            AuditRecord(**{k: v for k, v in data.items() if k in _AUDIT_FIELDS})
            for data in log.get("records", [])
        ]

    # -- files --------------------------------------------------------------------------
    def commit(self) -> None:
        for path, data in self._writes.items():
            if data is None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            else:
                _write_file(path, data)
        self._writes.clear()

    def _path(self, kind: str, key: str) -> Path:
        return self.directory / kind / _fname(key)

    def _read(self, path: Path) -> Any:
        if path in self._writes:
            data = self._writes[path]
            return _decode(data) if data is not None else None
        return _read_json(path)

    def _write(self, path: Path, value: Any) -> None:
        self._writes[path] = _encode(value)

    def _index(self, session_id: str, snap: SessionSnapshot) -> None:
        """Record the snapshot's lineage in its session's index (what `leaves` needs)."""
        path = self._path("sessions", session_id)
        index = self._read(path) or {"sessionId": session_id, "snapshots": []}
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
        self._write(path, index)
