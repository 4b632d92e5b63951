"""`ThreadedSessionStore`: a store whose transactions block, each run in a worker thread.

The file and PostgreSQL stores are such stores: their `_transaction` holds a file
lock or a pooled connection while the body runs, and `_run` hands it to a worker
thread so that the event loop goes on meanwhile. `Workers` are a store's own
threads, as many as it has connections (the PostgreSQL store's).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, Concatenate, ParamSpec, TypeVar

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
    pool's lock), and the hop costs about half of ``anyio.to_thread.run_sync``'s
    CPU under 50 concurrent callers.

    As with anyio's, a caller cancelled while its call runs gets
    `CancelledError` at once, and the call runs to its end in the thread
    (begun is begun: a write is never cut in half); a call still queued runs
    too. The threads are daemons, as anyio's: a call stuck on the network
    never holds up the interpreter's exit. A forked child starts threads of
    its own; `close` lets the idle threads go (the next call starts new ones).
    """

    def __init__(self, size: int, name: str) -> None:
        self._size = max(1, size)
        self._name = name
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[_Job | None] | None = None
        self._idle = threading.Semaphore(0)  # threads waiting for a job
        self._threads = 0
        self._pid = os.getpid()

    async def run(self, fn: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        self._submit((fn, done, loop))
        return await done  # a cancelled caller cancels only this future: the job runs on

    def close(self) -> None:
        """Let the threads go once the calls given to them are done."""
        with self._lock:
            jobs, threads = self._jobs, self._threads
            self._jobs, self._threads = None, 0
        if jobs is not None and self._pid == os.getpid():
            for _ in range(threads):
                jobs.put(None)  # after the jobs queued before it

    def _submit(self, job: _Job) -> None:
        with self._lock:
            if self._jobs is None or self._pid != os.getpid():
                # a fork's copy has none of the parent's threads: new ones, on a queue of its own
                self._pid, self._jobs, self._threads = os.getpid(), queue.SimpleQueue(), 0
                self._idle = threading.Semaphore(0)
            # a thread waiting for a job takes it, else a new one while there are fewer than `size`
            # (started before the job is queued: one that cannot start fails this call, never hangs it)
            if not self._idle.acquire(blocking=False) and self._threads < self._size:
                name = f"{self._name}-{self._threads + 1}"
                threading.Thread(target=_work, args=(self._jobs, self._idle), name=name, daemon=True).start()
                self._threads += 1
            self._jobs.put(job)


_Job = tuple[Callable[[], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]


def _work(jobs: queue.SimpleQueue[_Job | None], idle: threading.Semaphore) -> None:
    """A worker thread: run jobs until told to stop (None), each result back to its caller's loop."""
    while (job := jobs.get()) is not None:
        fn, done, loop = job
        del job
        try:
            result, error = fn(), None
        except BaseException as exc:  # noqa: BLE001 - the caller's to see
            result, error = None, exc
        with contextlib.suppress(RuntimeError):  # the caller's loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(_settle, done, result, error)
        del fn, done, loop, result, error  # hold nothing while idle
        idle.release()


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.cancelled():
        return  # its caller was cancelled: the job ran, nobody reads what it returned
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)
