"""S5's faulty cycles: the client gives up on its answer, or aborts it, then sends it again.

A fault cycle (``--fault-rate`` of a client's cycles, drawn from a seeded
generator) starts like any other: ``send`` pauses on the held ``transfer``
call. Its cycle id starts with ``f``, which makes the served tool sleep
``NB_BENCH_FAULT_TOOL_S`` after its ledger line (`peers/nb_agents/s5_app.py`),
so that what the client does next can land while the tool runs. Then one of:

* **timeout**: the resume goes out with a client-side timeout drawn between 0
  and 1.5 times this client's recent resume latency plus the tool's sleep;
  when it expires the client closes the connection (the server sees a
  disconnect: before the tool started, the claim is released; after, the turn
  ends ``aborted``), or the answer arrives first;
* **abort**: the resume goes out; meanwhile, on a second connection, the client
  reads the session's newest snapshot (``getSnapshot`` by session id) until it
  is the running child, and calls ``/abort`` on it while it is ``pending``.

Then the client re-sends the identical answer, and it must get the recorded
outcome (the completed result it already saw, or ``aborted``/``failed`` when
the tool had started) or, when no tool had started, a normal run. After a
recorded ``aborted``/``failed`` it sends the explicit retry (``"retry": true``),
which must complete, and re-sends the answer once more, which must replay the
retry's result. With several servers, everything after the fault goes to the
next server, as a load balancer's retry would. Each retry is counted per cycle:
the ledger must show exactly one tool run per cycle plus one per retry.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import TYPE_CHECKING, Any

from s5_transport import ClientTimeoutError, CycleError, transport

if TYPE_CHECKING:
    from s5_load import Client

FAULT_PREFIX = "f"
MODES = ("timeout", "abort")
CHILD_POLL_S = 0.01
CHILD_WAIT_S = 5.0


class FaultPlan:
    """Which of a client's cycles are faulty, how, and when the client gives up."""

    def __init__(self, rate: float, seed: str, tool_delay: float) -> None:
        self.rate = rate
        self.rng = random.Random(seed)
        self.tool_delay = tool_delay
        self.resume_s = 0.1  # this client's recent resume latency (a moving average)

    def pick(self) -> str | None:
        """None for a plain cycle, else the fault of this one."""
        if self.rate <= 0 or self.rng.random() >= self.rate:
            return None
        return self.rng.choice(MODES)

    def saw_resume(self, seconds: float) -> None:
        self.resume_s = 0.8 * self.resume_s + 0.2 * seconds

    def timeout(self) -> float:
        return self.rng.uniform(0.0, 1.5) * (self.resume_s + self.tool_delay)

    def abort_delay(self) -> float:
        return self.rng.uniform(0.0, 0.5) * self.resume_s


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = ("finishReason", "snapshotId", "message")
    return all(a.get(k) == b.get(k) for k in keys)


async def fault_cycle(
    client: Client, mode: str, cycle_id: str, first: dict[str, Any], body: dict[str, Any]
) -> dict[str, Any]:
    """Answer `first` (the paused turn) with `body` and break it as `mode`; the completed result."""
    side = transport(client.kind, client.other_url)
    try:
        if mode == "timeout":
            answered = await _timeout(client, body)
        else:
            answered = await _abort(client, side, first, body)
        return await _resend(client, side, cycle_id, body, answered, mode)
    finally:
        await side.aclose()


async def _timeout(client: Client, body: dict[str, Any]) -> dict[str, Any] | None:
    try:
        answered = await client.post("fault-resume", body, timeout=client.faults.timeout())
    except ClientTimeoutError:
        client.log.fault("timeout: gave up")
        return None
    client.log.fault(f"timeout: answered first ({answered.get('finishReason')})")
    return answered


async def _abort(client: Client, side: Any, first: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    resume = asyncio.ensure_future(client.post("fault-resume", body))
    try:
        await asyncio.sleep(client.faults.abort_delay())
        child = await _running_child(client, side, first, resume)
        if child is None:
            client.log.fault("abort: the resume ended before its child was seen")
        elif child.get("status") != "pending":
            client.log.fault(f"abort: too late (the child was {child.get('status')})")
        else:
            abort = {"data": {"snapshotId": child["snapshotId"]}}
            was = (await client.post("abort", abort, via=side, stream=False)).get("status")
            client.log.fault(f"abort: sent (the child was {was})")
        answered = await resume
    finally:
        if not resume.done():  # the cycle failed: drop the resume and its half-read connection
            resume.cancel()
            await client.transport.aclose()
    client.log.fault(f"abort: the resume answered {answered.get('finishReason')}")
    return answered


async def _running_child(
    client: Client, side: Any, first: dict[str, Any], resume: asyncio.Future[Any]
) -> dict[str, Any] | None:
    """The resume's child snapshot, once the session's newest snapshot is no longer the paused one."""
    ask = {"data": {"sessionId": first["sessionId"]}}
    deadline = time.perf_counter() + CHILD_WAIT_S
    while not resume.done():
        leaf = await client.post("getSnapshot", ask, via=side, stream=False)
        if leaf.get("snapshotId") != first["snapshotId"]:
            return leaf
        if time.perf_counter() > deadline:
            raise CycleError(f"getSnapshot: no child of {first['snapshotId']} within {CHILD_WAIT_S} s")
        await asyncio.sleep(CHILD_POLL_S)
    return None


async def _resend(
    client: Client,
    side: Any,
    cycle_id: str,
    body: dict[str, Any],
    answered: dict[str, Any] | None,
    mode: str,
) -> dict[str, Any]:
    paused_id = body["init"]["snapshotId"]
    again = await client.post("fault-resend", body, via=side)
    reason = again.get("finishReason")
    if answered is not None and answered.get("finishReason") == "stop" and not _same(again, answered):
        client.log.fault(f"ERROR re-send: the live answer said stop, the re-send of it says {reason}")
        raise CycleError(
            f"fault-resend {cycle_id}: the answer completed (finishReason stop, snapshot "
            f"{answered.get('snapshotId')}), but the same answer sent again gets {reason!r} "
            f"(snapshot {again.get('snapshotId')}): not the recorded outcome"
        )
    if reason == "stop":
        client.check_done(again, cycle_id, "fault-resend")
        client.log.fault("re-send: completed")
        return again
    if reason not in ("aborted", "failed"):
        raise CycleError(f"fault-resend {cycle_id}: finishReason {reason!r}")
    if answered is not None and answered.get("finishReason") == reason:
        if again.get("message") != answered.get("message"):
            raise CycleError(f"fault-resend {cycle_id}: a different {reason} outcome {str(again)[:200]}")
        if again.get("snapshotId") != answered.get("snapshotId"):
            if answered.get("snapshotId") != paused_id:
                raise CycleError(f"fault-resend {cycle_id}: {reason} as snapshot {again.get('snapshotId')}")
            # reported, not an error: the live answer names the paused snapshot, the replay its child
            client.log.fault(f"re-send: {reason}, live answer named the paused snapshot, replay the child")
    client.log.fault(f"re-send: recorded {reason}")
    retried = await client.post("retry", {**body, "data": {**body["data"], "retry": True}}, via=side)
    client.log.retried(
        cycle_id, "timeout" if answered is None else f"{mode} ({answered.get('finishReason')})"
    )
    client.check_done(retried, cycle_id, "retry")
    replay = await client.post("resend", body, via=side)
    if not _same(replay, retried):
        raise CycleError(f"resend {cycle_id} after its retry: a different result {str(replay)[:200]}")
    client.log.resends += 1
    return retried
