"""`ThreadedSessionStore`: a store whose transactions block, each run in a worker thread.

The file and PostgreSQL stores are such stores: their `_transaction` holds a file
lock or a pooled connection while the body runs, and `_run` hands it to a worker
thread so that the event loop goes on meanwhile. `Workers` are a store's own
threads, as many as it has connections (the PostgreSQL store's).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Concatenate, ParamSpec, TypeVar

import anyio.to_thread

from ._base import BaseSessionStore, Tx

__all__ = ["ThreadedSessionStore", "Workers"]

T = TypeVar("T")
P = ParamSpec("P")


class ThreadedSessionStore(BaseSessionStore[Tx]):
    """A `BaseSessionStore` whose `_transaction` blocks, run in a worker thread (`_in_thread`)."""

    async def _run(
        self, write: bool, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        return await self._in_thread(partial(self._transaction, write, fn, *args, **kwargs))

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        """``fn()`` in a worker thread (anyio's, shared by the process, unless a store has its own)."""
        return await anyio.to_thread.run_sync(fn)

    def _transaction(
        self, write: bool, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(tx, *args, **kwargs)`` in one transaction, in this (worker) thread."""
        raise NotImplementedError


class Workers:
    """A store's own worker threads, at most `size`, started as calls need them.

    A store whose calls each hold one of `size` connections runs them here: a
    call past `size` waits in the queue, not in a thread of its own blocked on
    the pool (with anyio's 40 shared threads, 32 of them took turns at the
    pool's lock), and the hop costs a plain executor's (measured: about half of
    ``anyio.to_thread.run_sync``'s CPU a call under 50 concurrent callers).

    As with anyio's, a caller cancelled while its call runs gets
    `CancelledError` at once, and the call runs to its end in the thread
    (begun is begun: a write is never cut in half); a call still queued runs
    too. A forked child starts threads of its own; `close` lets the idle
    threads go (the next call starts new ones).
    """

    def __init__(self, size: int, name: str) -> None:
        self._size = max(1, size)
        self._name = name
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pid = os.getpid()

    async def run(self, fn: Callable[[], T]) -> T:
        pool = self._pool
        if pool is None or self._pid != os.getpid():
            pool = self._start()
        return await asyncio.shield(asyncio.get_running_loop().run_in_executor(pool, fn))

    def close(self) -> None:
        """Let the threads go once the calls given to them are done."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.shutdown(wait=False)

    def _start(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                # a fork's copy of the parent's executor has no threads, and counts the parent's
                self._pid = os.getpid()
                self._pool = ThreadPoolExecutor(self._size, thread_name_prefix=self._name)
            return self._pool
