"""`Changes`: who waits for which row, and waking them when it changes.

A running turn watches its own pending row to notice an abort without
polling: the engine's heartbeat subscribes a callback (`subscribe`), and
`SessionStore.wait_changed` waits on a future. A store wakes both from its
save path, after the transaction committed; PostgreSQL also wakes them from
its LISTEN connection when another process saved the row (`._pg_listen`).
Waiters may be on any thread's event loop, as the stores are shared between
loops: each waits on a future, or is called back, on its own loop, woken
thread-safely from another thread.

Stores of one file or directory in one process share one `Changes`
(`shared`), so a save through one store object wakes a waiter on another.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .._sync import reset_after_fork

__all__ = ["Changes", "shared"]

_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]
_Subscriber = tuple[asyncio.AbstractEventLoop, Callable[[], None]]
E = TypeVar("E", _Waiter, _Subscriber)


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Changes:
    """The waiters of rows, by snapshot id.

    Example:
        >>> changes = Changes()
        >>> changes.notify("a row nobody waits for")
    """

    def __init__(self) -> None:
        self._start()
        reset_after_fork(self, Changes._start)

    def _start(self) -> None:
        """Nobody waiting, the lock free (again in a forked child, whose waiters are its parent's)."""
        self._lock = threading.Lock()
        self._waiters: dict[str, set[_Waiter]] = {}
        self._subscribers: dict[str, set[_Subscriber]] = {}
        # nobody waits and nobody subscribed: a save need not call `notify`. Read without the
        # lock: a waiter registers before it reads the row, and a save commits before it reads
        # this, so either the save sees the waiter or the waiter's read sees the save
        self.quiet = True

    def _settle(self) -> None:
        """Under the lock, after a waiter or subscriber left: `quiet` again when none is left."""
        self.quiet = not self._waiters and not self._subscribers

    def notify(self, snapshot_id: str | None) -> None:
        """Wake the waiters of `snapshot_id` (None: every waiter, as after missed notifications)."""
        with self._lock:
            if not self._waiters and not self._subscribers:
                return
            if snapshot_id is None:
                found = [w for waiters in self._waiters.values() for w in waiters]
                called = [s for subs in self._subscribers.values() for s in subs]
            else:
                found = list(self._waiters.get(snapshot_id, ()))
                called = list(self._subscribers.get(snapshot_id, ()))
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None  # a store's worker thread, or the LISTEN thread
        for loop, fut in found:
            with contextlib.suppress(RuntimeError):  # its loop was closed: nobody waits any more
                loop.call_soon_threadsafe(_wake, fut)
        for loop, callback in called:
            if loop is here:
                loop.call_soon(callback)
            else:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(callback)

    def _join(self, table: dict[str, set[E]], snapshot_id: str, entry: E) -> None:
        with self._lock:
            table.setdefault(snapshot_id, set()).add(entry)
            self.quiet = False

    def _leave(self, table: dict[str, set[E]], snapshot_id: str, entry: E) -> None:
        with self._lock:
            entries = table.get(snapshot_id)
            if entries is not None:
                entries.discard(entry)
                if not entries:
                    del table[snapshot_id]
                    self._settle()

    def subscribe(self, snapshot_id: str, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` on the calling event loop after each notification of `snapshot_id`
        (and of everything), until the returned function is called."""
        entry: _Subscriber = (asyncio.get_running_loop(), callback)
        self._join(self._subscribers, snapshot_id, entry)
        return functools.partial(self._leave, self._subscribers, snapshot_id, entry)

    async def wait(self, snapshot_id: str, timeout: float, settled: Callable[[], Awaitable[bool]]) -> None:
        """Until `snapshot_id` is notified or `timeout` seconds passed.

        `settled` runs once the waiter is registered: when it says the row
        needs no waiting for (a change the caller may have missed), return at once.
        """
        loop = asyncio.get_running_loop()
        waiter: _Waiter = (loop, loop.create_future())
        self._join(self._waiters, snapshot_id, waiter)
        try:
            if await settled() or timeout <= 0:
                return
            await asyncio.wait([waiter[1]], timeout=timeout)
        finally:
            self._leave(self._waiters, snapshot_id, waiter)

    def waiting(self) -> int:
        """How many waiters and subscribers there are (for tests and reprs)."""
        with self._lock:
            return sum(len(w) for w in self._waiters.values()) + sum(map(len, self._subscribers.values()))


_SHARED: weakref.WeakValueDictionary[str, Changes] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def _after_fork() -> None:
    global _SHARED_LOCK
    _SHARED_LOCK = threading.Lock()  # a parent's thread may have held it (each `Changes` resets itself)


os.register_at_fork(after_in_child=_after_fork)


def shared(key: str) -> Changes:
    """The `Changes` of every store of `key` (a resolved path) in this process."""
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = Changes()
        return found
