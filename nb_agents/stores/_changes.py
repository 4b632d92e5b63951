"""`Changes`: who waits for which row, and waking them when it changes.

A running turn waits on its own pending row (`SessionStore.wait_changed`) to
notice an abort without polling. A store wakes the waiters of a row from its
save path, after the transaction committed; PostgreSQL also wakes them from
its LISTEN connection when another process saved the row (`._pg_listen`).
Waiters may be on any thread's event loop, as the stores are shared between
loops: each waits on a future of its own loop, woken thread-safely.

Stores of one file or directory in one process share one `Changes`
(`shared`), so a save through one store object wakes a waiter on another.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Awaitable, Callable

__all__ = ["Changes", "shared"]

_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


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
        self._lock = threading.Lock()
        self._waiters: dict[str, set[_Waiter]] = {}

    def notify(self, snapshot_id: str | None) -> None:
        """Wake the waiters of `snapshot_id` (None: every waiter, as after missed notifications)."""
        with self._lock:
            if not self._waiters:
                return
            if snapshot_id is None:
                found = [w for waiters in self._waiters.values() for w in waiters]
            else:
                found = list(self._waiters.get(snapshot_id, ()))
        for loop, fut in found:
            with contextlib.suppress(RuntimeError):  # its loop was closed: nobody waits any more
                loop.call_soon_threadsafe(_wake, fut)

    async def wait(self, snapshot_id: str, timeout: float, settled: Callable[[], Awaitable[bool]]) -> None:
        """Until `snapshot_id` is notified or `timeout` seconds passed.

        `settled` runs once the waiter is registered: when it says the row
        needs no waiting for (a change the caller may have missed), return at once.
        """
        loop = asyncio.get_running_loop()
        waiter: _Waiter = (loop, loop.create_future())
        with self._lock:
            self._waiters.setdefault(snapshot_id, set()).add(waiter)
        try:
            if await settled() or timeout <= 0:
                return
            await asyncio.wait([waiter[1]], timeout=timeout)
        finally:
            with self._lock:
                waiters = self._waiters.get(snapshot_id)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._waiters[snapshot_id]

    def waiting(self) -> int:
        """How many waiters there are (for tests and reprs)."""
        with self._lock:
            return sum(len(w) for w in self._waiters.values())


_SHARED: weakref.WeakValueDictionary[str, Changes] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def shared(key: str) -> Changes:
    """The `Changes` of every store of `key` (a resolved path) in this process."""
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = Changes()
        return found
