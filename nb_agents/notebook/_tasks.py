"""Where the widgets run their coroutines: the event loop of this thread.

A click handler or a cell runs inside the kernel's event loop, so the work
becomes a task on that loop and the widget updates as it goes. With no loop
running in this thread (a plain script), nb_agents' own background loop runs
it instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from .. import _sync

__all__ = ["spawn"]

T = TypeVar("T")


def spawn(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """Start `coro` as a task on the running loop (else on nb_agents' own loop)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        return loop.create_task(coro)

    async def start() -> asyncio.Task[T]:
        return asyncio.ensure_future(coro)

    return asyncio.run_coroutine_threadsafe(start(), _sync.portal_loop()).result()
