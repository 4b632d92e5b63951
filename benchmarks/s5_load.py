"""S5's load generator: concurrent clients doing approval cycles over HTTP (its own process).

Run by `s5_http` against one or more served ``peers/nb_agents/s5_app.py``
(client ``i`` talks to ``--url`` number ``i`` modulo their count); prints one
JSON line. Each of ``--clients`` clients has its own keep-alive connection on
loopback (`s5_transport`: ``httpx.AsyncClient`` or raw HTTP/1.1) and repeats
the S3 approval cycle with Genkit's wire JSON, each cycle a fresh conversation:

1. ``send``: ``{"data": {"message": "transfer <cycle>"}, "init": {}}`` must
   answer ``finishReason: interrupted`` with the held ``transfer`` call of
   this cycle;
2. ``resume``: the call restarted with ``metadata.resumed.toolApproved`` and
   ``init.snapshotId`` must answer ``stop`` with the text ``done <cycle>``;
3. ``resend`` (every ``--resend-every``-th cycle of a client): the identical
   resume body again must answer the same snapshot id and text (the first
   result back; the tool must not run again, which the ledger shows).

With ``--fault-rate``, that share of the cycles breaks step 2 on purpose (a
client-side timeout or an ``/abort``), re-sends the answer and, when the
recorded outcome is ``aborted`` or ``failed``, sends the explicit retry: see
`s5_faults`. The explicit retries are reported per cycle id
(``retried_cycles``), for the ledger check.

By default (``--sse half``) odd-numbered clients ask for SSE (``Accept: text/event-stream``) and read the
stream to its terminal frame; even-numbered ones get one JSON body, so each
request kind is measured in both modes. Latency is client-side, from sending
the request to having the whole answer (``--sse all`` / ``none``: every client
streams / none does). A warm-up (checked, not timed) comes
first; then the measured window of ``--duration`` seconds; clients finish the
cycle they are in when the window closes and stop. Every request has a
timeout, so the process always ends.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import resource
import sys
import time
from typing import Any

from s5_faults import FAULT_PREFIX, FaultPlan, fault_cycle
from s5_transport import ClientTimeoutError, CycleError, Transport, frames, transport

MAX_ERROR_SAMPLES = 20


class Client:
    """One simulated user: a connection, a mode, and the record of what it did."""

    def __init__(self, index: int, urls: list[str], args: argparse.Namespace, log: Recorder) -> None:
        self.index = index
        self.streaming = args.sse == "all" or (args.sse == "half" and index % 2 == 1)
        self.resend_every = args.resend_every
        self.tag = f"-{args.tag}" if args.tag else ""  # keeps cycle ids apart across runs on one ledger
        self.log = log
        self.kind = args.client
        self.url = urls[index % len(urls)]
        self.other_url = urls[(index + 1) % len(urls)]  # where a fault's re-send goes (a balancer's retry)
        self.transport: Transport = transport(args.client, self.url)
        self.faults = FaultPlan(args.fault_rate, f"{args.seed}-{index}", args.fault_tool_s)

    async def post(
        self,
        kind: str,
        body: dict[str, Any],
        *,
        via: Transport | None = None,
        stream: bool | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """POST `body` (to the agent, or its ``/getSnapshot`` or ``/abort`` for those kinds); its result."""
        sse = self.streaming if stream is None else stream
        label = f"{kind}-{'sse' if sse else 'json'}"
        suffix = f"/{kind}" if kind in ("getSnapshot", "abort") else ""
        raw = json.dumps(body).encode()
        t0 = time.perf_counter()
        try:
            status, text = await (via or self.transport).post(raw, sse, suffix=suffix, timeout=timeout)
        except CycleError as exc:
            self.log.request(
                label, t0, time.perf_counter(), ok=False, expected=isinstance(exc, ClientTimeoutError)
            )
            exc.args = (f"{label}: {exc}",)
            raise
        t1 = time.perf_counter()
        if status != 200:
            self.log.request(label, t0, t1, ok=False)
            raise CycleError(f"{label}: HTTP {status}: {text[:200]}")
        self.log.request(label, t0, t1, ok=True)
        if not sse:
            return dict(json.loads(text)["result"])
        last = frames(text)[-1]
        if "result" not in last:
            raise CycleError(f"{label}: the stream ended with {json.dumps(last)[:200]}")
        return dict(last["result"])

    def check_done(self, done: dict[str, Any], cycle_id: str, kind: str) -> None:
        text = "".join(p.get("text", "") for p in done["message"]["content"])
        if done.get("finishReason") != "stop" or text != f"done {cycle_id}":
            raise CycleError(f"{kind} {cycle_id}: {done.get('finishReason')!r} {text!r}")

    async def cycle(self, seq: int) -> None:
        fault = self.faults.pick()
        cycle_id = f"{FAULT_PREFIX if fault else 'c'}{self.index}-{seq}{self.tag}"
        t0 = time.perf_counter()
        first = await self.post(
            "send",
            {
                "data": {"message": {"role": "user", "content": [{"text": f"transfer {cycle_id}"}]}},
                "init": {},
            },
        )
        if first.get("finishReason") != "interrupted":
            raise CycleError(f"send {cycle_id}: finishReason {first.get('finishReason')!r}, not interrupted")
        held = [p for p in first["message"]["content"] if (p.get("metadata") or {}).get("interrupt")]
        if len(held) != 1 or held[0]["toolRequest"]["input"].get("cycle") != cycle_id:
            raise CycleError(f"send {cycle_id}: held calls {json.dumps(held)[:200]}")
        restart = {"toolRequest": held[0]["toolRequest"], "metadata": {"resumed": {"toolApproved": True}}}
        body = {"data": {"resume": {"restart": [restart]}}, "init": {"snapshotId": first["snapshotId"]}}
        if fault:
            await fault_cycle(self, fault, cycle_id, first, body)
            self.log.cycle(cycle_id, t0, time.perf_counter())
            return
        t1 = time.perf_counter()
        done = await self.post("resume", body)
        self.faults.saw_resume(time.perf_counter() - t1)
        self.check_done(done, cycle_id, "resume")
        self.log.cycle(cycle_id, t0, time.perf_counter())
        if self.resend_every > 0 and seq % self.resend_every == 0:
            again = await self.post("resend", body)
            if again.get("snapshotId") != done["snapshotId"] or again.get("message") != done["message"]:
                raise CycleError(f"resend {cycle_id}: a different result {json.dumps(again)[:200]}")
            self.log.resends += 1

    async def run(self, stop_at: float, cycles: int = 0) -> None:
        """Cycles until `stop_at` (perf_counter), or exactly `cycles` of them when that is positive."""
        seq = 0
        try:
            while (seq < cycles) if cycles > 0 else (time.perf_counter() < stop_at):
                try:
                    await self.cycle(seq)
                except (CycleError, KeyError, TypeError, ValueError) as exc:
                    self.log.error(f"client {self.index} cycle {seq}: {type(exc).__name__}: {exc}")
                seq += 1
        finally:
            await self.transport.aclose()


class Recorder:
    """Every request and cycle, with times, and what the fault cycles met; summarized over the window."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, float, float, bool]] = []
        self.cycles: list[tuple[str, float, float]] = []
        self.errors: list[str] = []
        self.error_count = 0
        self.resends = 0
        self.client_timeouts = 0  # requests the client gave up on by design (fault cycles)
        self.retries: collections.Counter[str] = collections.Counter()  # explicit retries per cycle id
        self.faults: collections.Counter[str] = collections.Counter()
        self.retry_paths: dict[str, str] = {}  # how each retried cycle's fault went

    def request(self, kind: str, t0: float, t1: float, *, ok: bool, expected: bool = False) -> None:
        if expected:
            self.client_timeouts += 1
            return
        self.requests.append((kind, t0, t1, ok))

    def cycle(self, cycle_id: str, t0: float, t1: float) -> None:
        self.cycles.append((cycle_id, t0, t1))

    def fault(self, what: str) -> None:
        self.faults[what] += 1

    def retried(self, cycle_id: str, how: str) -> None:
        self.retries[cycle_id] += 1
        self.retry_paths[cycle_id] = how

    def error(self, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERROR_SAMPLES:
            self.errors.append(message)


def percentile(sorted_values: list[float], q: float) -> float:
    """The nearest-rank percentile `q` (0-100) of sorted values."""
    rank = max(1, min(len(sorted_values), round(q / 100 * len(sorted_values) + 0.5)))
    return sorted_values[rank - 1]


def latency(values_s: list[float]) -> dict[str, Any]:
    vals = sorted(v * 1000 for v in values_s)
    if not vals:
        return {"n": 0}
    return {
        "n": len(vals),
        "p50_ms": round(percentile(vals, 50), 2),
        "p90_ms": round(percentile(vals, 90), 2),
        "p99_ms": round(percentile(vals, 99), 2),
        "max_ms": round(vals[-1], 2),
        "mean_ms": round(sum(vals) / len(vals), 2),
    }


def summarize(log: Recorder, t_start: float, t_end: float, cpu_s: float) -> dict[str, Any]:
    window = t_end - t_start
    inside = [r for r in log.requests if t_start <= r[2] <= t_end]
    kinds: dict[str, list[float]] = {}
    for kind, t0, t1, ok in inside:
        if ok:
            kinds.setdefault(kind, []).append(t1 - t0)
    cycles_in = [c for c in log.cycles if t_start <= c[2] <= t_end]
    failed = sum(1 for r in log.requests if not r[3])
    return {
        "window_s": round(window, 3),
        "cycles": len(cycles_in),
        "cycles_per_s": round(len(cycles_in) / window, 1),
        "requests": len(inside),
        "requests_per_s": round(len(inside) / window, 1),
        "latency": {k: latency(v) for k, v in sorted(kinds.items())},
        "cycle_latency": latency([c[2] - c[1] for c in cycles_in]),
        "errors": log.error_count,
        "failed_requests": failed,
        "error_samples": log.errors,
        "resends": log.resends,
        "fault_cycles": sum(1 for c in log.cycles if c[0].startswith(FAULT_PREFIX)),
        "fault_cycles_in_window": sum(1 for c in cycles_in if c[0].startswith(FAULT_PREFIX)),
        "client_timeouts": log.client_timeouts,
        "retries": sum(log.retries.values()),
        "fault_outcomes": dict(sorted(log.faults.items())),
        "total_requests": len(log.requests),
        "completed_cycle_ids": [c[0] for c in log.cycles],
        "retried_cycles": dict(log.retries),
        "retry_paths": log.retry_paths,
        "client_cpu_s": round(cpu_s, 2),
        "client_cpu_share": round(cpu_s / (log.requests[-1][2] - log.requests[0][1]), 3)
        if log.requests
        else 0,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    log = Recorder()
    clients = [Client(i, args.url, args, log) for i in range(args.clients)]
    now = time.perf_counter()
    t_start = now + args.warmup
    t_end = t_start + args.duration
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.gather(*(c.run(t_end, args.cycles) for c in clients))
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    if args.cycles > 0:  # counted, not timed: every cycle is inside the window
        t_start, t_end = now, time.perf_counter()
    out = summarize(log, t_start, t_end, cpu)
    out["tail_s"] = round(time.perf_counter() - t_end, 3)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="S5 load generator (approval cycles over HTTP)")
    ap.add_argument(
        "--url",
        nargs="+",
        required=True,
        help="the agent's URL, e.g. http://127.0.0.1:8765/bench; several: clients spread over them",
    )
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--duration", type=float, default=20.0, help="measured seconds")
    ap.add_argument("--warmup", type=float, default=2.0, help="checked but untimed seconds first")
    ap.add_argument(
        "--resend-every", type=int, default=10, help="re-send the resume of every n-th cycle (0: never)"
    )
    ap.add_argument(
        "--cycles", type=int, default=0, help="exactly this many cycles per client (no window; for counting)"
    )
    ap.add_argument(
        "--sse", choices=["half", "all", "none"], default="half", help="which clients stream (half: odd ones)"
    )
    ap.add_argument(
        "--client", choices=["httpx", "raw"], default="httpx", help="httpx.AsyncClient, or raw HTTP/1.1"
    )
    ap.add_argument("--fault-rate", type=float, default=0.0, help="share of cycles that time out or abort")
    ap.add_argument(
        "--fault-tool-s", type=float, default=0.0, help="the seconds the served tool sleeps in a fault cycle"
    )
    ap.add_argument("--tag", default="", help="appended to every cycle id (runs sharing one ledger)")
    ap.add_argument("--seed", default="s5", help="seeds which cycles are faulty, and their timings")
    args = ap.parse_args(argv)
    if not all(u.startswith(("http://127.", "http://localhost", "http://[::1]")) for u in args.url):
        sys.exit("s5_load drives loopback servers only")
    print(json.dumps(asyncio.run(main_async(args))))


if __name__ == "__main__":
    main()
