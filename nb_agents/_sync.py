"""The sync facade: run coroutines on one private event-loop thread.

Every public ``<verb>_sync`` is a one-line delegation to `run` (or
`iterate` for streams). The loop lives in a daemon thread started on first
use, so the sync twins work in a plain script *and* inside an already
running loop (a Jupyter cell, an async test) without nest-asyncio: the
calling thread simply blocks on a `concurrent.futures.Future` while the
private loop does the work.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["iterate", "portal_loop", "run"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def portal_loop() -> asyncio.AbstractEventLoop:
    """The private loop, started on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None or not _loop.is_running():
            loop = asyncio.new_event_loop()
            started = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(started.set)
                loop.run_forever()

            _thread = threading.Thread(target=main, name="nb_agents-sync", daemon=True)
            _thread.start()
            started.wait()
            _loop = loop
        return _loop


async def _await(aw: Awaitable[T]) -> T:
    return await aw


def run(aw: Coroutine[Any, Any, T] | Awaitable[T]) -> T:
    """Run `aw` to completion on the private loop and return its result."""
    loop = portal_loop()
    if threading.current_thread() is _thread:
        raise RuntimeError(
            "a *_sync method was called from async code running on nb_agents' own loop; "
            "await the async method instead"
        )
    coro = aw if asyncio.iscoroutine(aw) else _await(aw)
    fut = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return fut.result()
    except KeyboardInterrupt:
        fut.cancel()
        raise


def iterate(it: AsyncIterator[T]) -> Iterator[T]:
    """Iterate an async iterator from sync code, one item per round trip."""
    while True:
        try:
            yield run(it.__anext__())
        except StopAsyncIteration:
            return
