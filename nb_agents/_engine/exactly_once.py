"""Exactly-once resume: who gets to answer a paused snapshot.

The first answer claims the snapshot with the store's compare-and-swap and
runs the turn. The same answer sent again waits for that turn and gets its
result; a different answer is turned away. A claim whose turn died (its
pending row expired, or never appeared) is released and claimed anew, so a
crash cannot lock an interrupt forever.
"""

from __future__ import annotations

import asyncio

from ..stores.base import ResumeClaim, SessionStore
from ..types import SessionSnapshot

__all__ = ["claim_resume"]

TERMINAL = ("completed", "failed", "aborted")


async def claim_resume(
    store: SessionStore,
    parent_id: str,
    digest: str,
    child_id: str,
    *,
    timeout: float,
    pending: SessionSnapshot | None = None,
) -> SessionSnapshot | ResumeClaim | None:
    """Claim the resume of `parent_id` for the turn `child_id`.

    Returns None when this call won (and then `pending`, if given, is the
    child's row, written in the claim's transaction); the finished snapshot of
    the earlier turn when it ran the same answer (`digest`); the winning
    `ResumeClaim` when that turn was given a different answer.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        claim = await store.claim_resume(parent_id, digest, child_id, pending=pending)
        if claim is None:
            return None
        snap = await store.get_snapshot(claim.child_id)
        expired = snap is not None and snap.status == "expired"
        if expired or (snap is None and loop.time() > deadline):
            await store.release_claim(parent_id, claim.child_id)
            continue
        if claim.digest != digest:
            return claim
        if snap is not None and snap.status in TERMINAL:
            return snap
        await asyncio.sleep(store.poll_interval)
