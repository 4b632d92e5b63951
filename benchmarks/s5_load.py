"""S5's load generator: concurrent clients doing approval cycles over raw HTTP (its own process).

Run by `s5_http` against a served ``peers/nb_agents/s5_app.py``; prints one JSON
line. Each of ``--clients`` clients has its own ``httpx.AsyncClient`` (one
keep-alive connection on loopback) and repeats the S3 approval cycle with
Genkit's wire JSON, each cycle a fresh conversation:

1. ``send``: ``{"data": {"message": "transfer <cycle>"}, "init": {}}`` must
   answer ``finishReason: interrupted`` with the held ``transfer`` call of
   this cycle;
2. ``resume``: the call restarted with ``metadata.resumed.toolApproved`` and
   ``init.snapshotId`` must answer ``stop`` with the text ``done <cycle>``;
3. ``resend`` (every ``--resend-every``-th cycle of a client): the identical
   resume body again must answer the same snapshot id and text (the first
   result back; the tool must not run again, which the ledger shows).

Odd-numbered clients ask for SSE (``Accept: text/event-stream``) and read the
stream to its terminal frame; even-numbered ones get one JSON body, so each
request kind is measured in both modes. Latency is client-side, from sending
the request to having the whole answer. A warm-up (checked, not timed) comes
first; then the measured window of ``--duration`` seconds; clients finish the
cycle they are in when the window closes and stop. Every request has a
timeout, so the process always ends.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
import urllib.parse
from typing import Any

import httpx

SSE = {"Accept": "text/event-stream"}
REQUEST_TIMEOUT_S = 30.0
MAX_ERROR_SAMPLES = 20


class CycleError(Exception):
    """A request of a cycle answered something other than what the cycle expects."""


def _frames(body: str) -> list[dict[str, Any]]:
    out = []
    for piece in body.strip().split("\n\n"):
        if not piece.startswith("data: "):
            raise CycleError(f"an SSE frame is not 'data: <json>': {piece[:120]!r}")
        out.append(json.loads(piece[len("data: ") :]))
    return out


class HttpxTransport:
    """POSTs through ``httpx.AsyncClient`` (one keep-alive connection): what a Python client uses."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.AsyncClient(
            timeout=REQUEST_TIMEOUT_S, limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)
        )

    async def post(self, body: bytes, sse: bool) -> tuple[int, str]:
        headers = {"Content-Type": "application/json", **(SSE if sse else {})}
        try:
            res = await self.http.post(self.url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise CycleError(f"{type(exc).__name__}: {exc}") from None
        return res.status_code, res.text

    async def aclose(self) -> None:
        await self.http.aclose()


class RawTransport:
    """POSTs as hand-written HTTP/1.1 over one asyncio connection: a load generator costing little CPU.

    Reads ``Content-Length`` and chunked bodies (uvicorn sends an SSE stream chunked).
    """

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.head = (
            f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
        )
        self.conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, body: bytes, sse: bool) -> tuple[int, str]:
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                return await self._post(body, sse)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
            await self.aclose()
            raise CycleError(f"{type(exc).__name__}: {exc}") from None

    async def _post(self, body: bytes, sse: bool) -> tuple[int, str]:
        if self.conn is None:
            self.conn = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.conn
        accept = "Accept: text/event-stream\r\n" if sse else ""
        writer.write(f"{self.head}{accept}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        status_line, *header_lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {}
        for line in header_lines:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            data = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            pieces = []
            while size := int((await reader.readuntil(b"\r\n"))[:-2], 16):
                pieces.append((await reader.readexactly(size + 2))[:-2])
            await reader.readexactly(2)
            data = b"".join(pieces)
        else:
            raise ValueError(f"a response with neither Content-Length nor chunks: {headers}")
        if headers.get("connection", "").lower() == "close":
            await self.aclose()
        return int(status_line.split()[1]), data.decode()

    async def aclose(self) -> None:
        if self.conn is not None:
            self.conn[1].close()
            self.conn = None


class Client:
    """One simulated user: a connection, a mode, and the record of what it did."""

    def __init__(self, index: int, url: str, resend_every: int, log: Recorder, transport: str) -> None:
        self.index = index
        self.streaming = index % 2 == 1
        self.resend_every = resend_every
        self.log = log
        self.transport = HttpxTransport(url) if transport == "httpx" else RawTransport(url)

    async def _post(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        label = f"{kind}-{'sse' if self.streaming else 'json'}"
        raw = json.dumps(body).encode()
        t0 = time.perf_counter()
        try:
            status, text = await self.transport.post(raw, self.streaming)
        except CycleError as exc:
            self.log.request(label, t0, time.perf_counter(), ok=False)
            raise CycleError(f"{label}: {exc}") from None
        t1 = time.perf_counter()
        if status != 200:
            self.log.request(label, t0, t1, ok=False)
            raise CycleError(f"{label}: HTTP {status}: {text[:200]}")
        self.log.request(label, t0, t1, ok=True)
        if not self.streaming:
            return dict(json.loads(text)["result"])
        last = _frames(text)[-1]
        if "result" not in last:
            raise CycleError(f"{label}: the stream ended with {json.dumps(last)[:200]}")
        return dict(last["result"])

    async def cycle(self, seq: int) -> None:
        cycle_id = f"c{self.index}-{seq}"
        t0 = time.perf_counter()
        first = await self._post(
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
        done = await self._post("resume", body)
        text = "".join(p.get("text", "") for p in done["message"]["content"])
        if done.get("finishReason") != "stop" or text != f"done {cycle_id}":
            raise CycleError(f"resume {cycle_id}: {done.get('finishReason')!r} {text!r}")
        self.log.cycle(cycle_id, t0, time.perf_counter())
        if seq % self.resend_every == 0:
            again = await self._post("resend", body)
            if again.get("snapshotId") != done["snapshotId"] or again.get("message") != done["message"]:
                raise CycleError(f"resend {cycle_id}: a different result {json.dumps(again)[:200]}")
            self.log.resends += 1

    async def run(self, stop_at: float) -> None:
        seq = 0
        try:
            while time.perf_counter() < stop_at:
                try:
                    await self.cycle(seq)
                except (CycleError, KeyError, TypeError, ValueError) as exc:
                    self.log.error(f"client {self.index} cycle {seq}: {type(exc).__name__}: {exc}")
                seq += 1
        finally:
            await self.transport.aclose()


class Recorder:
    """Every request and cycle, with times; summarized over the measured window."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, float, float, bool]] = []
        self.cycles: list[tuple[str, float, float]] = []
        self.errors: list[str] = []
        self.error_count = 0
        self.resends = 0

    def request(self, kind: str, t0: float, t1: float, *, ok: bool) -> None:
        self.requests.append((kind, t0, t1, ok))

    def cycle(self, cycle_id: str, t0: float, t1: float) -> None:
        self.cycles.append((cycle_id, t0, t1))

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
        "total_requests": len(log.requests),
        "completed_cycle_ids": [c[0] for c in log.cycles],
        "client_cpu_s": round(cpu_s, 2),
        "client_cpu_share": round(cpu_s / (log.requests[-1][2] - log.requests[0][1]), 3)
        if log.requests
        else 0,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    log = Recorder()
    clients = [Client(i, args.url, args.resend_every, log, args.client) for i in range(args.clients)]
    now = time.perf_counter()
    t_start = now + args.warmup
    t_end = t_start + args.duration
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.gather(*(c.run(t_end) for c in clients))
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    out = summarize(log, t_start, t_end, cpu)
    out["tail_s"] = round(time.perf_counter() - t_end, 3)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="S5 load generator (approval cycles over HTTP)")
    ap.add_argument("--url", required=True, help="the agent's URL, e.g. http://127.0.0.1:8765/bench")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--duration", type=float, default=20.0, help="measured seconds")
    ap.add_argument("--warmup", type=float, default=2.0, help="checked but untimed seconds first")
    ap.add_argument("--resend-every", type=int, default=10, help="re-send the resume of every n-th cycle")
    ap.add_argument(
        "--client", choices=["httpx", "raw"], default="httpx", help="httpx.AsyncClient, or raw HTTP/1.1"
    )
    args = ap.parse_args(argv)
    if not args.url.startswith(("http://127.", "http://localhost", "http://[::1]")):
        sys.exit("s5_load drives loopback servers only")
    print(json.dumps(asyncio.run(main_async(args))))


if __name__ == "__main__":
    main()
