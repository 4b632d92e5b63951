"""Pending rows and the heartbeat that keeps them alive.

A turn that runs where its caller cannot see it (a detached turn, or a claimed
resume) has a ``pending`` snapshot row. `keep_alive` refreshes its heartbeat
so readers know the worker lives (a stale one reads ``expired``), and notices
an abort written from outside (another process, the HTTP companion). Tasks
started here are kept referenced until they finish.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from .._sync import Signal
from .._sync import keep as spawn
from ..stores.base import SessionStore, now_iso
from ..types import SessionSnapshot

__all__ = ["keep_alive", "pending_row", "spawn", "watch_event"]  # spawn: `_sync.keep`


def pending_row(
    snapshot_id: str, session_id: str, parent_id: str | None, *, agent: str | None, owner: str | None
) -> SessionSnapshot:
    """The row of a turn that has started and not finished: no state, a fresh heartbeat."""
    now = now_iso()
    return SessionSnapshot(
        snapshot_id=snapshot_id,
        session_id=session_id,
        parent_id=parent_id,
        created_at=now,
        updated_at=now,
        heartbeat_at=now,
        status="pending",
        agent=agent,
        owner=owner,
    )


async def keep_alive(
    store: SessionStore, snapshot_id: str, *, done: asyncio.Event, on_abort: Callable[[], None]
) -> None:
    """Refresh the pending row's heartbeat until it is settled; call `on_abort` if it is aborted.

    Between reads it waits for the store to say the row may have changed
    (``wait_changed``, e.g. PostgreSQL's NOTIFY), at most a poll interval; a
    store without that hook is polled.
    """
    interval = store.heartbeat_interval.total_seconds()
    loop = asyncio.get_running_loop()
    next_beat = loop.time() + interval
    await _pause(store, snapshot_id, done, store.poll_interval)  # the row was just written
    while not done.is_set():
        snap = await store.get_snapshot(snapshot_id)
        if snap is None or snap.status not in ("pending", "expired"):
            if snap is not None and snap.status in ("aborted", "aborting"):
                on_abort()
            return
        if loop.time() >= next_beat:
            next_beat = loop.time() + interval
            await store.save_snapshot(snapshot_id, _beat)
        await _pause(store, snapshot_id, done, max(0.0, next_beat - loop.time()))


async def _pause(store: SessionStore, snapshot_id: str, done: asyncio.Event, longest: float) -> None:
    """Until the turn is done, the row may have changed, or `longest` seconds passed.

    A store told of other processes' saves (PostgreSQL's NOTIFY) is waited on
    for as long as that; any other is asked again after a poll interval, so an
    abort written by another process is noticed as soon as before.
    """
    if not getattr(store, "notices_other_processes", False):
        longest = min(longest, store.poll_interval)
    wait_changed = getattr(store, "wait_changed", None)
    ended = asyncio.ensure_future(done.wait())
    changed = asyncio.ensure_future(
        wait_changed(snapshot_id, longest) if wait_changed is not None else asyncio.sleep(longest)
    )
    try:
        await asyncio.wait({ended, changed}, timeout=longest + 1, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (ended, changed):
            task.cancel()


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
