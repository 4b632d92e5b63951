"""`ThreadedSessionStore`: a store whose transactions block, each run in a worker thread.

The file and PostgreSQL stores are such stores: their `_transaction` holds a file
lock or a pooled connection while the body runs, and `_run` hands it to a worker
thread so that the event loop goes on meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Concatenate, ParamSpec, TypeVar

import anyio.to_thread

from ._base import BaseSessionStore, Tx

__all__ = ["ThreadedSessionStore"]

T = TypeVar("T")
P = ParamSpec("P")


class ThreadedSessionStore(BaseSessionStore[Tx]):
    """A `BaseSessionStore` whose `_transaction` blocks, run in a worker thread."""

    async def _run(
        self, write: bool, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        return await anyio.to_thread.run_sync(partial(self._transaction, write, fn, *args, **kwargs))

    def _transaction(
        self, write: bool, fn: Callable[Concatenate[Tx, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(tx, *args, **kwargs)`` in one transaction, in this (worker) thread."""
        raise NotImplementedError
