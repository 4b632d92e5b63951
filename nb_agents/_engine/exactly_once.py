"""Exactly-once resume: who gets to answer a paused snapshot, and under which generation.

The first answer claims the snapshot with the store's compare-and-swap and
runs the turn as an `Attempt` (the claim's generation fences every write it
makes). The same answer sent again waits for that attempt and gets its
recorded outcome, whether it completed, failed or was aborted; a different
answer is turned away. Two things replace a claim, each bumping its
generation so that a worker still holding the old one can no longer write:

* a *takeover*: the attempt's worker died or stalled (its pending row expired,
  or never appeared); the next identical answer runs it again;
* an explicit *retry* (``AgentInput.retry``): the attempt failed or was
  aborted after its tools started, and the caller asks for one more attempt
  with the same answer.

A claim whose attempt never started a tool is released instead (the answer
was never acted on), so the interrupt can be answered again, differently too.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

from ..errors import FailedPreconditionError, NbAgentsError
from ..stores.base import Fence, ResumeClaim, SessionStore
from ..types import SessionSnapshot

__all__ = ["Attempt", "Lost", "Moved", "claim_resume"]

TERMINAL = ("completed", "failed", "aborted")
RETRYABLE = ("failed", "aborted")


@dataclass(frozen=True)
class Attempt(Fence):
    """The claim a resume turn runs under, and so the fence of every write it makes (the claim on
    `parent_id` is still ``(child_id, generation)``), with the `digest` of the answer it runs."""

    digest: str
    idempotency_base: str  # the same for every attempt at this answer (takeovers and retries included)


@dataclass(frozen=True, slots=True)
class Lost:
    """The claim went to another attempt: why this one may not run."""

    error: NbAgentsError


@dataclass(frozen=True, slots=True)
class Moved:
    """A partial answer found the snapshot answered in part by another: go on from `snapshot`,
    the turn that answer left paused (where this answer's interrupts may still wait)."""

    snapshot: SessionSnapshot


async def claim_resume(
    store: SessionStore,
    parent_id: str,
    digest: str,
    child_id: str,
    *,
    timeout: float,
    pending: SessionSnapshot,
    retry: bool = False,
    partial: bool = False,
) -> Attempt | SessionSnapshot | Lost | Moved:
    """Claim the resume of `parent_id` for the turn `child_id`.

    Returns the `Attempt` to run when this call won (then `pending` is the
    child's row, written in the claim's transaction); the finished snapshot of
    the attempt that ran the same answer (its outcome, to replay); or `Lost`.
    With `partial`, a snapshot that another partial answer resumed into a
    turn still paused gives `Moved` to that turn instead of `Lost`.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    base = hashlib.sha256(f"{parent_id}\n{digest}".encode()).hexdigest()[:32]  # `Attempt.idempotency_base`
    while True:
        claim = await store.claim_resume(parent_id, digest, child_id, pending=pending)
        if claim is None:
            return Attempt(parent_id, child_id, 1, digest, base)
        if claim.digest != digest:
            if partial:
                moved = await _paused_child(store, claim.child_id, deadline)
                if moved is not None:
                    return Moved(moved)
            return Lost(_already(parent_id, claim))
        snap = await store.get_snapshot(claim.child_id)
        stale = (snap is not None and snap.status == "expired") or (snap is None and loop.time() > deadline)
        if stale or (retry and snap is not None and snap.status in RETRYABLE):
            won = await _replace(store, parent_id, claim, digest, base, child_id, pending)
            if won is not None:
                return won
            continue  # someone else replaced it first: look again
        if retry and snap is not None and snap.status == "completed":
            return Lost(
                FailedPreconditionError(
                    f"Snapshot {parent_id} was already resumed and that turn completed "
                    f"(snapshot {claim.child_id}); there is nothing to retry."
                )
            )
        if snap is not None and snap.status == "aborted":
            # an attempt that acted on nothing releases its claim before its row says aborted:
            # the claim read above may be gone by now, and then this answer is the one to run
            again = await store.claim_resume(parent_id, digest, child_id, pending=pending)
            if again is None:
                return Attempt(parent_id, child_id, 1, digest, base)
            if again.child_id != claim.child_id:
                continue
        if snap is not None and snap.status in TERMINAL:
            return snap
        await asyncio.sleep(store.poll_interval)


async def _paused_child(store: SessionStore, child_id: str, deadline: float) -> SessionSnapshot | None:
    """The winning attempt's snapshot once it settles, if it left the turn paused."""
    loop = asyncio.get_running_loop()
    while True:
        snap = await store.get_snapshot(child_id)
        if snap is not None and snap.status in TERMINAL:
            paused = snap.status == "completed" and snap.finish_reason == "interrupted"
            return snap if paused and snap.state is not None else None
        if loop.time() > deadline or (snap is not None and snap.status == "expired"):
            return None
        await asyncio.sleep(store.poll_interval)


async def _replace(
    store: SessionStore,
    parent_id: str,
    claim: ResumeClaim,
    digest: str,
    base: str,
    child_id: str,
    pending: SessionSnapshot,
) -> Attempt | None:
    if await store.replace_claim(parent_id, claim, digest, child_id, pending=pending) is None:
        return Attempt(parent_id, child_id, claim.generation + 1, digest, base)
    return None


def _already(parent_id: str, claim: ResumeClaim) -> NbAgentsError:
    return FailedPreconditionError(
        f"Snapshot {parent_id} was already resumed with another answer (by snapshot {claim.child_id}); "
        f"continue from snapshot {claim.child_id} instead of answering again.",
        details={"alreadyResumed": claim.child_id},  # what the chat raises as AlreadyResumedError
    )
