"""`PgListener`: one LISTEN connection per `PostgresSessionStore`, shared by all its waiters.

Every write that aborts a pending row's run sends
``NOTIFY nb_agents_changes`` with the row's id in its transaction
(`._pg_rows`), from whichever process wrote it.
The listener holds one connection of its own in a daemon thread, blocked in
``select`` on its socket (no statement runs while it waits), and wakes the
store's waiters of each id it hears (`._changes`). When the connection drops
it reconnects with a growing pause (up to 2 s); while it is down, waiters
wake by their timeouts; once it listens again, it wakes every waiter, since
it may have missed their rows' notifications.

It starts on the first `wait_changed` and stops with `close` (or when the
store is collected, or at exit). A forked child starts a listener of its own
and keeps the inherited connection referenced and unused, as `._pg_pool`
does. psycopg is imported by `postgres.py` first.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
from typing import Any

import psycopg

from .._sync import reset_after_fork
from ._changes import Changes
from ._pg_rows import CHANNEL

__all__ = ["PgListener"]

_INHERITED: list[Any] = []  # connections and sockets a forked child inherited: never used there
_IDLE_WAKE = 30.0  # seconds a select may block; the socket or the wake pipe ends it sooner
_MAX_PAUSE = 2.0


class PgListener:
    """LISTEN for row changes on one connection, in a thread, until `close`.

    Args:
        dsn: The libpq connection string.
        changes: Whose waiters to wake.
    """

    def __init__(self, dsn: str, changes: Changes) -> None:
        self._dsn = dsn
        self._changes = changes
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._pid = os.getpid()
        self._conn: psycopg.Connection[Any] | None = None
        self.listening = threading.Event()  # set while LISTEN is in effect
        reset_after_fork(self, PgListener._forked)

    def _forked(self) -> None:
        """In a forked child no thread of the parent holds the lock (the first `start` there
        drops the parent's thread and connection)."""
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start listening, unless already started (in this process)."""
        with self._lock:
            if self._pid != os.getpid():  # forked: the thread is gone, its connection is the parent's
                _INHERITED.extend(x for x in (self._conn, self._wake_r, self._wake_w) if x is not None)
                self._pid, self._thread, self._conn = os.getpid(), None, None
                self._wake_r = self._wake_w = None
                self.listening.clear()
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop = threading.Event()
            self._wake_r, self._wake_w = socket.socketpair()
            self._thread = threading.Thread(
                target=self._serve, args=(self._stop, self._wake_r), name="nb_agents-pg-listen", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        """Stop the thread and close its connection (waits a little for it)."""
        with self._lock:
            if self._pid != os.getpid():
                return
            thread, wake_w, wake_r = self._thread, self._wake_w, self._wake_r
            self._thread = self._wake_w = self._wake_r = None
            self._stop.set()
            if wake_w is not None:
                with contextlib.suppress(OSError):
                    wake_w.send(b"x")
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        for sock in (wake_w, wake_r):
            if sock is not None:
                sock.close()

    # -- the thread ------------------------------------------------------------------
    def _serve(self, stop: threading.Event, wake: socket.socket) -> None:
        pause = 0.05
        while not stop.is_set():
            try:
                self._listen(stop, wake)
                pause = 0.05
            except Exception:  # noqa: BLE001 - a dropped connection, a server restart: listen again
                pass
            finally:
                self.listening.clear()
            stop.wait(pause)
            pause = min(pause * 2, _MAX_PAUSE)

    def _listen(self, stop: threading.Event, wake: socket.socket) -> None:
        with psycopg.connect(self._dsn, autocommit=True) as conn:
            self._conn = conn
            try:
                conn.execute(f"LISTEN {CHANNEL}")
                self._changes.notify(None)  # what changed before this LISTEN took effect is unknown
                self.listening.set()
                pgconn = conn.pgconn
                while not stop.is_set():
                    ready, _, _ = select.select([pgconn.socket, wake.fileno()], [], [], _IDLE_WAKE)
                    if wake.fileno() in ready:
                        return  # `close` asked
                    if ready:
                        pgconn.consume_input()  # raises when the connection is gone
                        while (note := pgconn.notifies()) is not None:
                            payload = note.extra.decode("utf-8", "surrogateescape")
                            self._changes.notify(payload or None)
                        if pgconn.status != psycopg.pq.ConnStatus.OK:
                            return
            finally:
                self._conn = None
