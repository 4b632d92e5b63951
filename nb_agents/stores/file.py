"""`FileSessionStore`: snapshots as readable JSON files in one directory.

This module owns the store's locking and transactions; the layout and the
primitives are `._file_rows`' (and the encodings `._file_layout`'s)::

    <dir>/snapshots/<snapshot>.json   a pretty-printed snapshot: its turn's messages, where the rest are
    <dir>/sessions/<session>.jsonl    the session's index: a line per row written (id, parent, base, ...)
    <dir>/claims/<snapshot>.json      the resume claim of an interrupted snapshot
    <dir>/audit/<session>.jsonl       the session's audit records, a line each, oldest first
    <dir>/.lock                       the cross-process lock

A turn writes in proportion to what it adds: its snapshot file holds the
messages it added on top of its parent's, and the logs grow by a line.

An operation is a transaction of `._file_rows.Files`: under an exclusive
`fcntl.flock` on ``.lock`` (between processes) and a threading lock for a
write, a shared flock for a read. A write transaction encodes every file it
writes first (a value JSON cannot hold fails before anything is written)
and writes them at its end, so no other write comes between a save and its
audit records, or a claim and its pending row (a crash between two files
can lose the second). A save wakes the `wait_changed` waiters of its row in
this process (every store of the same directory shares them); a save from
another process is noticed only when the waiter's timeout runs out.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from ._changes import shared
from ._delta import MessageCache
from ._file_layout import IndexCache
from ._file_rows import Files
from ._threaded import ThreadedSessionStore
from .base import HEARTBEAT_TIMEOUT

if sys.platform != "win32":
    import fcntl

__all__ = ["FileSessionStore"]

T = TypeVar("T")
P = ParamSpec("P")


class FileSessionStore(ThreadedSessionStore[Files]):
    """A session store of plain JSON files, one per snapshot, that you can read and diff.

    Safe to share between threads, event loops and processes on one machine
    (on POSIX; on Windows only between threads of one process). Each snapshot
    file holds the messages its turn added and names the snapshot whose
    history it continues; reading a history follows those names (recent
    histories are cached), so prefer `SqliteSessionStore` for many sessions.

    Args:
        directory: Where the files live; created if missing.
        heartbeat_timeout: When a pending row whose heartbeat is older reads
            ``expired`` (seconds or a `timedelta`).

    Example:
        >>> import tempfile
        >>> store = FileSessionStore(tempfile.mkdtemp())
    """

    poll_interval = 0.1

    def __init__(
        self, directory: str | os.PathLike[str], *, heartbeat_timeout: float | timedelta = HEARTBEAT_TIMEOUT
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        super().__init__(
            heartbeat_timeout=heartbeat_timeout, changes=shared(os.path.realpath(self.directory))
        )
        self._lock_path = self.directory / ".lock"
        self._thread_lock = threading.Lock()
        self._indexes = IndexCache()
        self._cache = MessageCache()

    def __repr__(self) -> str:
        return f"FileSessionStore({str(self.directory)!r})"

    def close(self) -> None:
        """Forget what is cached (the files are the store)."""
        self._indexes.clear()
        self._cache.clear()

    def _transaction(
        self, write: bool, fn: Callable[Concatenate[Files, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """In a worker thread: `fn` on a `Files` under the lock, its writes made at the end."""
        with self._locked(exclusive=write):
            files = Files(self.directory, self._indexes, self._cache)
            out = fn(files, *args, **kwargs)
            if write:
                files.commit()
        for snapshot_id, rev, messages in files.written:
            self._cache.put(snapshot_id, rev, messages)
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
