"""The session-store conformance suite: the contract the engine relies on, as pytest tests.

A store of your own (Redis, DynamoDB, ...) runs it from its tests by
subclassing `StoreConformance` and saying how to make a new, empty store::

    from nb_agents.testing.stores import StoreConformance

    class TestRedisStore(StoreConformance):
        def make_store(self, tmp_path):
            return RedisSessionStore("redis://localhost:6379/15", prefix=tmp_path.name)

Every check gets a store of its own from `make_store` (it may also return a
coroutine) and closes it afterwards with its ``aclose()`` or ``close()``, if
it has one. Define ``make_store_with_heartbeat_timeout(self, tmp_path,
timeout)`` too, to check that the store's heartbeat timeout is its own
(that check is skipped without it). To make the store from other fixtures, override the ``store``
fixture instead (an async generator fixture, run by anyio's pytest plugin,
which comes with nb_agents's anyio dependency). The checks run on asyncio.

What they check:

* rows: a save reads back as written, unknown fields and odd strings kept; a
  mutator returning None writes nothing, one that raises writes nothing; the
  mutator sees the stored row; the store owns the id and a row keeps its
  session; reads, and mutators, get objects of their own (changing their
  lists changes nothing stored);
* reads: the latest snapshot of a session is its newest leaf (ties by id,
  children in other sessions do not count); a pending row with a stale
  heartbeat reads ``expired``, while the stored row stays pending;
  session ids, oldest first;
* claims: the first claim of a snapshot wins (generation 1), writes the
  pending row of its child in the same transaction (unless the row exists),
  and later claims get the winner and write nothing; only the winner's child
  releases it; a replacement of the expected claim (or of none) wins, makes
  the next generation and writes its pending row, a stale one gets the
  current claim and writes nothing, and of concurrent ones one wins;
* fences: a save fenced with a generation that was replaced, released or
  never claimed raises `StaleClaimError` without running its mutator and
  writes neither its row nor its audit records; a current fence, or none,
  writes; fenced saves racing a replacement are all-or-nothing;
* heartbeats: ``heartbeat_timeout`` is a positive `timedelta`, the interval
  half of it, and it decides what reads ``expired``;
* waiting: ``wait_changed`` returns by its timeout, is woken by a save of
  the row (also for a waiter on another thread's event loop), and returns
  at once for a row that is no longer pending;
* bookkeeping: ``agent`` and ``owner`` read back, a rewrite keeps the row's;
  audit records keep ``claimed_by`` apart from ``answered_by``;
* audit: records come back in order; a save appends its records only when it
  writes the row;
* races: concurrent claims of one snapshot have one winner, concurrent
  read-modify-writes lose no update, also from threads on event loops of
  their own.

A check that cannot apply to a store is skipped by overriding it, e.g.
``test_several_event_loops_share_the_store = pytest.mark.skip(reason=...)(
StoreConformance.test_several_event_loops_share_the_store)``.

Importing this module imports pytest (``import nb_agents.testing`` does not).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path

import pytest

from ..stores.base import SessionStore

# before the checks are imported: pytest shows their failed assertions in full
pytest.register_assert_rewrite(
    "nb_agents.testing._claim_checks", "nb_agents.testing._fence_checks", "nb_agents.testing._store_checks"
)

from ._claim_checks import ClaimChecks  # noqa: E402
from ._fence_checks import FenceChecks  # noqa: E402
from ._store_checks import RowChecks  # noqa: E402
from ._store_samples import close_store  # noqa: E402

__all__ = ["StoreConformance"]


class StoreConformance(RowChecks, ClaimChecks, FenceChecks):
    """The store conformance suite: subclass it as ``Test...`` and define `make_store`.

    Example:
        >>> from nb_agents.stores import InMemorySessionStore
        >>> class TestInMemoryStore(StoreConformance):
        ...     def make_store(self, tmp_path):
        ...         return InMemorySessionStore()
    """

    pytestmark = pytest.mark.anyio  # every check is async, on anyio's pytest plugin

    def make_store(self, tmp_path: Path) -> SessionStore | Awaitable[SessionStore]:
        """A new, empty store (or a coroutine that makes one); `tmp_path` is this test's own directory."""
        raise NotImplementedError(
            f"{type(self).__name__}: define make_store(self, tmp_path) to return a new, empty store "
            "(or override the `store` fixture)"
        )

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    async def store(self, tmp_path: Path, anyio_backend: str) -> AsyncIterator[SessionStore]:
        """The store under test: `make_store`'s, closed after the test."""
        made = self.make_store(tmp_path)
        store = await made if inspect.isawaitable(made) else made
        try:
            yield store
        finally:
            await close_store(store)
