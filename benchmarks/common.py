"""Shared, stdlib-only harness code imported by every peer's worker.

A worker (``peers/<peer>/bench.py``) runs in that peer's own virtual
environment, so nothing here may import a third-party package. It owns:

* the scripted conversation every peer plays (`reply_for`, the tool names
  and the expected outcome of each scenario),
* the counters that prove each iteration did what it should (model calls,
  tool runs), and the loud check that fails the run when it did not,
* the timing loops (per-iteration for S1-S3, per-cycle for S4) and their
  statistics (median, quartiles, IQR),
* process facts (peak RSS) and storage facts (bytes of a SQLite file after a
  WAL checkpoint, bytes of a directory),
* the worker command line and its one-line JSON result on stdout.

Timing uses ``time.perf_counter_ns`` around the whole iteration; the checks
run after the clock stops. Garbage collection stays on, as in production.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import resource
import sqlite3
import statistics
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

# -- the scripted conversation ---------------------------------------------------------

WEATHER_TOOL = "get_weather"  # runs without asking (S2)
TRANSFER_TOOL = "transfer"  # needs approval (S3, S4)
WEATHER_ARGS = {"city": "Paris"}
TRANSFER_ARGS = {"amount": 5}

PROMPTS = {"S1": "hi", "S2": "weather?", "S3": "transfer", "S4": "transfer"}


@dataclass(frozen=True)
class Expect:
    """What one iteration (or one S4 cycle) must produce."""

    text: str
    model_calls: int
    tool_runs: dict[str, int]


EXPECT = {
    "S1": Expect("hello", 1, {WEATHER_TOOL: 0, TRANSFER_TOOL: 0}),
    "S2": Expect("sunny", 2, {WEATHER_TOOL: 1, TRANSFER_TOOL: 0}),
    "S3": Expect("done", 2, {WEATHER_TOOL: 0, TRANSFER_TOOL: 1}),
    "S4": Expect("done", 2, {WEATHER_TOOL: 0, TRANSFER_TOOL: 1}),
}


def reply_for(last_role: str, last_text: str, last_tool: str | None) -> tuple[str, str | None]:
    """The scripted model's rule: what to answer given the last message.

    Returns ``("text", answer)`` or ``("call", tool_name)``. Every peer's
    model adapter translates its own message types into these three facts
    and the answer back into its own response type, with no I/O and no sleep.
    """
    if last_role == "tool":
        return ("text", "sunny" if last_tool == WEATHER_TOOL else "done")
    if last_text == "hi":
        return ("text", "hello")
    if last_text == "weather?":
        return ("call", WEATHER_TOOL)
    if last_text == "transfer":
        return ("call", TRANSFER_TOOL)
    raise CheckFailedError(
        f"scripted model got an unexpected last message: role={last_role!r} text={last_text!r}"
    )


class Counters:
    """Side effects counted by the scripted model and the tools."""

    def __init__(self) -> None:
        self.model_calls = 0
        self.tool_runs = {WEATHER_TOOL: 0, TRANSFER_TOOL: 0}

    def snapshot(self) -> tuple[int, dict[str, int]]:
        return self.model_calls, dict(self.tool_runs)


COUNTERS = Counters()


class CheckFailedError(AssertionError):
    """An iteration did not produce what its scenario expects."""


def check(scenario: str, i: int, text: str, before: tuple[int, dict[str, int]]) -> None:
    exp = EXPECT[scenario]
    calls = COUNTERS.model_calls - before[0]
    runs = {k: COUNTERS.tool_runs[k] - before[1][k] for k in COUNTERS.tool_runs}
    problems = []
    if text != exp.text:
        problems.append(f"final text {text!r} != {exp.text!r}")
    if calls != exp.model_calls:
        problems.append(f"model calls {calls} != {exp.model_calls}")
    if runs != exp.tool_runs:
        problems.append(f"tool runs {runs} != {exp.tool_runs}")
    if problems:
        raise CheckFailedError(f"{scenario} iteration {i}: " + "; ".join(problems))


def found_pending(name: str | None) -> None:
    """Assert that the caller found the paused call (by name) through the peer's API."""
    if name != TRANSFER_TOOL:
        raise CheckFailedError(f"the pending call found through the API is {name!r}, not {TRANSFER_TOOL!r}")


# -- statistics --------------------------------------------------------------------------


def stats(values_us: list[float]) -> dict[str, Any]:
    """Median, quartiles and IQR of microsecond samples."""
    if not values_us:
        return {"n": 0}
    vals = sorted(values_us)
    if len(vals) >= 4:
        q1, q2, q3 = statistics.quantiles(vals, n=4, method="inclusive")
    else:
        q1 = vals[0]
        q2 = statistics.median(vals)
        q3 = vals[-1]
    return {
        "n": len(vals),
        "median_us": round(q2, 1),
        "q1_us": round(q1, 1),
        "q3_us": round(q3, 1),
        "iqr_us": round(q3 - q1, 1),
        "min_us": round(vals[0], 1),
        "mean_us": round(statistics.fmean(vals), 1),
    }


def peak_rss_kib() -> int:
    """Peak resident set size of this process so far (KiB, Linux)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


# -- timing loops --------------------------------------------------------------------------

Step = Callable[[], Awaitable[str] | str]


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    out = fn(*args)
    if inspect.isawaitable(out):
        out = await out
    return out


async def iterations(scenario: str, once: Step, *, n: int, warmup: int) -> dict[str, Any]:
    """Time `once` (one whole scenario iteration returning the final text)."""
    times: list[float] = []
    for i in range(warmup + n):
        before = COUNTERS.snapshot()
        t0 = time.perf_counter_ns()
        text = await _call(once)
        t1 = time.perf_counter_ns()
        check(scenario, i, text, before)
        if i >= warmup:
            times.append((t1 - t0) / 1000)
    return {"stats": stats(times), "checked_iterations": warmup + n}


@dataclass
class Session:
    """One S4 conversation driven statelessly: every request loads, runs, saves.

    ``send(prompt) -> pending`` runs the first request of a cycle and returns
    what the client learned of the paused call (the peer's own value: an
    interrupt, a call id...). ``approve(pending) -> text`` runs the second.
    ``pending_name(pending)`` names the paused tool (checked each cycle).
    ``finish() -> bytes or None`` closes the store and measures it.
    """

    send: Callable[[str], Awaitable[Any] | Any]
    approve: Callable[[Any], Awaitable[str] | str]
    pending_name: Callable[[Any], str | None]
    finish: Callable[[], Awaitable[int | None] | int | None]
    notes: list[str] = field(default_factory=list)


async def cycles(session: Session, *, count: int, edge: int = 10) -> dict[str, Any]:
    """Run `count` approval cycles in one session; per-cycle times and bytes stored."""
    per_cycle: list[float] = []
    for c in range(count):
        before = COUNTERS.snapshot()
        t0 = time.perf_counter_ns()
        pending = await _call(session.send, PROMPTS["S4"])
        found_pending(session.pending_name(pending))
        text = await _call(session.approve, pending)
        t1 = time.perf_counter_ns()
        check("S4", c, text, before)
        per_cycle.append((t1 - t0) / 1000)
    stored = await _call(session.finish)
    k = min(edge, count // 2) or 1
    first, last = stats(per_cycle[:k]), stats(per_cycle[-k:])
    return {
        "cycles": count,
        "edge": k,
        "first": first,
        "last": last,
        "ratio_last_first": round(last["median_us"] / first["median_us"], 3),
        "total_s": round(sum(per_cycle) / 1e6, 3),
        "per_cycle_us": [round(t, 1) for t in per_cycle],
        "bytes_stored": stored,
        "notes": session.notes,
    }


# -- storage facts ---------------------------------------------------------------------------


def sqlite_bytes(path: str) -> int:
    """Bytes of a SQLite database after a WAL checkpoint: the file plus its -wal."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        conn.close()
    total = 0
    for suffix in ("", "-wal"):
        if os.path.exists(path + suffix):
            total += os.path.getsize(path + suffix)
    return total


def dir_bytes(path: str) -> int:
    """Total bytes of the regular files under `path`."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(root, name))
    return total


# -- worker entry point ------------------------------------------------------------------------


def worker_main(
    peer: str,
    version: Callable[[], dict[str, str]],
    scenarios: dict[str, Callable[[argparse.Namespace], Awaitable[dict[str, Any]]]],
) -> None:
    """Parse the worker CLI, run one scenario, print one JSON line, exit 0/1/2.

    Exit 1 means a check failed (the harness must fail loudly); exit 2 means
    the peer could not run the scenario at all (recorded with the error).
    """
    ap = argparse.ArgumentParser(description=f"benchmark worker for {peer}")
    ap.add_argument("scenario", choices=sorted(scenarios))
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--workdir", default=".")
    args = ap.parse_args()
    out: dict[str, Any] = {"peer": peer, "scenario": args.scenario}
    code = 0
    try:
        out["versions"] = version()
        out.update(asyncio.run(scenarios[args.scenario](args)))
        out["status"] = "ok"
    except CheckFailedError as exc:
        out.update(status="check_failed", error=str(exc))
        code = 1
    except Exception as exc:  # noqa: BLE001 - a peer that cannot run: record the exact error
        out.update(status="error", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
        code = 2
    out["peak_rss_kib"] = peak_rss_kib()
    out["python"] = sys.version.split()[0]
    print(json.dumps(out))
    sys.exit(code)
