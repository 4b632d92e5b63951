"""Pending rows and the heartbeat that keeps them alive.

A turn that runs where its caller cannot see it (a detached turn, or a claimed
resume) has a ``pending`` snapshot row. `begin_watch` puts it under watch: its
heartbeat is refreshed so readers know the worker lives (a stale one reads
``expired``), and an abort written from outside (another process, the HTTP
companion) is noticed and reported to the turn.

A row is watched from a poll interval after its turn began (nothing about it
is due sooner): a turn that ends first, as an in-process approval turn most
often does, costs one timer and nothing else. One `_Watcher` per store and
event loop watches every pending row of that store on that loop, in one task
that sleeps until the earliest thing due (and ends a poll interval after the
last row left): a watched turn costs no task, timer or read of its own. It reads a row

* when the watch begins (a change told before it listened);
* when the store says the row may have changed (its ``on_change`` callback:
  a save in this process, or PostgreSQL's NOTIFY from any process), unless
  the turn has finished by then (its own final write is such a change);
* every poll interval for a store that cannot tell of other processes' saves
  (SQLite, files); for one that can (PostgreSQL), with each heartbeat;

and saves its heartbeat every ``store.heartbeat_interval``. A store without
``on_change`` (a third-party one) is read every poll interval. Tasks started
here are kept referenced until they finish.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from .._made import made
from .._sync import Signal
from .._sync import keep as spawn
from ..stores.base import SessionStore, now_iso
from ..types import SessionSnapshot

__all__ = ["begin_watch", "pending_row", "spawn", "watch_event"]  # spawn: `_sync.keep`

log = logging.getLogger("nb_agents.engine")


def pending_row(
    snapshot_id: str, session_id: str, parent_id: str | None, *, agent: str | None, owner: str | None
) -> SessionSnapshot:
    """The row of a turn that has started and not finished: no state, a fresh heartbeat."""
    now = now_iso()
    row = {
        "snapshot_id": snapshot_id, "session_id": session_id, "parent_id": parent_id, "created_at": now,
        "updated_at": now, "heartbeat_at": now, "status": "pending", "agent": agent, "owner": owner,
    }  # fmt: skip
    return made(SessionSnapshot, row)


def begin_watch(
    store: SessionStore,
    loop: asyncio.AbstractEventLoop,
    snapshot_id: str,
    done: asyncio.Event,
    on_abort: Callable[[], None],
) -> None:
    """Watch the pending row until `done` is set: refresh its heartbeat, call `on_abort` if it
    is aborted. Its caller schedules it a poll interval after the turn began
    (``loop.call_later(store.poll_interval, begin_watch, ...)``), when the row's first read is
    due, and cancels that timer when the turn ends: a turn that ends sooner (an in-process
    approval turn, most often) is never watched, as nothing about its row was due yet. The watch
    begins with a read of the row, so an abort saved meanwhile is noticed then; the row is
    watched by its store's watcher on this loop.
    """
    if done.is_set():
        return  # the turn ended before anything about its row was due
    per_loop = _WATCHERS.get(loop)
    if per_loop is None:
        per_loop = _WATCHERS[loop] = {}
    watcher = per_loop.get(id(store))
    if watcher is None or watcher.store is not store:
        watcher = per_loop[id(store)] = _Watcher(store, loop, per_loop)
    watcher.watch(snapshot_id, done, on_abort)


@dataclass(slots=True, eq=False)
class _Row:
    """One watched pending row."""

    snapshot_id: str
    done: asyncio.Event
    on_abort: Callable[[], None]
    read_at: float
    beat_at: float
    stop: Callable[[], None] | None = None


class _Watcher:
    """The pending rows of one store on one event loop, and the one task that watches them."""

    def __init__(
        self, store: SessionStore, loop: asyncio.AbstractEventLoop, registry: dict[int, _Watcher]
    ) -> None:
        self.store = store
        self.loop = loop
        self.registry = registry
        self.rows: dict[str, _Row] = {}
        self.task: asyncio.Task[None] | None = None
        self.wake: asyncio.Future[None] | None = None
        self.wake_at = float("inf")
        self.poll = store.poll_interval
        self.interval = store.heartbeat_interval.total_seconds()
        self.notices = bool(getattr(store, "notices_other_processes", False))
        self.on_change: Callable[[str, Callable[[], None]], Callable[[], None]] | None = getattr(
            store, "on_change", None
        )

    def watch(self, snapshot_id: str, done: asyncio.Event, on_abort: Callable[[], None]) -> None:
        """Watch a row whose turn began a poll interval ago (`begin_watch`): read it now."""
        now = self.loop.time()
        row = _Row(snapshot_id, done, on_abort, now, now - self.poll + self.interval)
        old = self.rows.pop(snapshot_id, None)
        if old is not None and old.stop is not None:
            old.stop()
        self.rows[snapshot_id] = row
        if self.on_change is not None:
            row.stop = self.on_change(snapshot_id, lambda: self._changed(row))
        if self.task is None:
            self.task = spawn(self._run())
        elif row.read_at < self.wake_at:
            self._wake()

    def _changed(self, row: _Row) -> None:
        """The store says the row may have changed: read it soon, unless its turn is over."""
        if self.rows.get(row.snapshot_id) is not row:
            return
        if row.done.is_set():
            self._drop(row)  # its own final write, most often: nothing to read
            return
        row.read_at = self.loop.time()
        self._wake()

    def _wake(self) -> None:
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)

    def _drop(self, row: _Row) -> None:
        if self.rows.get(row.snapshot_id) is row:
            del self.rows[row.snapshot_id]
            if not self.rows and self.wake_at > self.loop.time() + self.poll:
                self._wake()  # none left: linger a poll interval, not until a far heartbeat
        if row.stop is not None:
            row.stop()
            row.stop = None

    async def _run(self) -> None:
        idle = False
        try:
            while True:
                now = self.loop.time()
                for row in [r for r in self.rows.values() if r.done.is_set()]:
                    self._drop(row)
                if not self.rows:
                    if idle:
                        break
                    # linger a poll interval: the next turn (sequential calls) needs no new task
                    idle = True
                    await self._sleep_until(now + self.poll)
                    continue
                idle = False
                due = min(min(r.read_at, r.beat_at) for r in self.rows.values())
                if due > now:
                    await self._sleep_until(due)
                    continue
                for row in list(self.rows.values()):
                    if row.done.is_set() or self.rows.get(row.snapshot_id) is not row:
                        continue
                    try:
                        if row.read_at <= now or row.beat_at <= now:
                            await self._check(row, now)
                    except Exception:  # one row's store error must not stop the others
                        log.warning("the heartbeat of turn %s stopped", row.snapshot_id, exc_info=True)
                        self._drop(row)
        finally:
            self.task = None
            for row in list(self.rows.values()):  # cancelled (the loop is closing): nothing more to do
                self._drop(row)
            if self.registry.get(id(self.store)) is self:
                del self.registry[id(self.store)]

    async def _sleep_until(self, when: float) -> None:
        self.wake = wake = self.loop.create_future()
        self.wake_at = when
        timer = self.loop.call_at(when, _set, wake)
        try:
            await wake
        finally:
            timer.cancel()
            self.wake, self.wake_at = None, float("inf")

    async def _check(self, row: _Row, now: float) -> None:
        """Read the row (its turn ends here if it settled), and refresh its heartbeat when due."""
        snap = await self.store.get_snapshot(row.snapshot_id)
        if row.done.is_set():
            self._drop(row)
            return
        if snap is None or snap.status not in ("pending", "expired"):
            self._drop(row)
            if snap is not None and snap.status in ("aborted", "aborting"):
                row.on_abort()
            return
        row.read_at = now + self.poll if not self.notices else max(row.beat_at, now + self.poll)
        if row.beat_at <= now:
            row.beat_at = self.loop.time() + self.interval
            if self.notices:
                row.read_at = row.beat_at
            await self.store.save_snapshot(row.snapshot_id, _beat)


_WATCHERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, _Watcher]] = (
    weakref.WeakKeyDictionary()
)


def _set(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _beat(cur: SessionSnapshot | None) -> SessionSnapshot | None:
    if cur is None or cur.status != "pending":
        return None
    return cur.model_copy(update={"heartbeat_at": now_iso()})


def watch_event(event: asyncio.Event, signal: Signal) -> asyncio.Task[None]:
    """Set `signal` when a plain `asyncio.Event` is set (cancel the task when done)."""

    async def wait() -> None:
        await event.wait()
        signal.set()

    task = spawn(wait())

    def stop() -> None:
        task.cancel()

    signal.add_callback(stop)
    return task
