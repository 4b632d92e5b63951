"""S5's approval cycle through `nb-agents serve`'s app, called as ASGI in this process (issue 23).

No sockets, no HTTP parser, no other process: the app (`build_app` over
`peers/nb_agents/s5_app.py`, on SQLite) is called with ASGI scopes and the
messages uvicorn would give it, one cycle at a time (POST the message, POST the
approval), so what is measured is the app's own CPU per cycle: the turn route,
the engine and the store. JSON and SSE apart, alternated in rounds; with
``--profile`` a cProfile of the given mode (cumulative and own time, top
functions) instead of timings; with ``--statements`` the time of each SQLite
statement a cycle runs (wall time in ``execute``, per cycle, and how many), so
that the store's share of a cycle is seen apart from the Python around it.
``--tree DIR`` times another tree's nb_agents (``git archive <commit> nb_agents
| tar -x -C DIR``), for before/after; ``--floor`` times `floor_app.py`'s app on
SQLite in the same rounds, alternated, so that the two apps' own CPU is seen
apart from the HTTP server's, which S5's ratio folds in; ``--store memory`` serves
nb_agents from its in-memory store (no SQLite)::

    .venv/bin/python benchmarks/asgi_cycle.py [--cycles 2000] [--rounds 3] [--tree DIR] [--concurrency 50]
    .venv/bin/python benchmarks/asgi_cycle.py --concurrency 50 --floor [--store memory]
    .venv/bin/python benchmarks/asgi_cycle.py --profile json
    .venv/bin/python benchmarks/asgi_cycle.py --statements json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
NETWORK = False  # set with more than one client: a request's body arrives a loop pass later
STORE = "sqlite"  # or "memory" (--store): the engine and the server's path without SQLite


def _scope(path: str, sse: bool, length: int) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]
    headers.append((b"content-length", str(length).encode()))
    if sse:
        headers.append((b"accept", b"text/event-stream"))
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "http_version": "1.1",
        "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": b"", "headers": headers, "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80),
        "state": {},
    }  # fmt: skip


async def post(app: Any, body: dict[str, Any], sse: bool) -> dict[str, Any]:
    """One request; its result (the last SSE frame's, or the JSON body's). With `NETWORK`,
    its body arrives a pass of the loop later, as a socket's would: clients at once interleave."""
    raw = json.dumps(body).encode()
    done = asyncio.Event()
    sent: list[bytes] = []

    async def receive() -> dict[str, Any]:
        if not sent and not done.is_set() and raw_left:
            raw_left.clear()
            if NETWORK:
                await asyncio.sleep(0)
            return {"type": "http.request", "body": raw, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    raw_left = [True]
    await app(_scope("/bench", sse, len(raw)), receive, send)
    text = b"".join(sent).decode()
    if sse:
        last = text.strip().split("\n\n")[-1]
        return dict(json.loads(last[len("data: ") :])["result"])
    return dict(json.loads(text)["result"])


async def cycle(app: Any, n: int, sse: bool) -> None:
    msg = {"role": "user", "content": [{"text": f"transfer c{n}"}]}
    first = await post(app, {"data": {"message": msg}, "init": {}}, sse)
    [held] = [p for p in first["message"]["content"] if (p.get("metadata") or {}).get("interrupt")]
    restart = {"toolRequest": held["toolRequest"], "metadata": {"resumed": {"toolApproved": True}}}
    final = await post(
        app, {"data": {"resume": {"restart": [restart]}}, "init": {"snapshotId": first["snapshotId"]}}, sse
    )
    assert final["finishReason"] == "stop", final


def build(work: str) -> Any:
    os.environ.setdefault("NB_BENCH_LEDGER", os.path.join(work, "ledger.txt"))
    from nb_agents.server.cli import build_app, load_target

    app, _ = build_app(
        load_target(os.path.join(HERE, "peers", "nb_agents", "s5_app.py") + ":agent"),
        store=f"sqlite:///{work}/s5.db" if STORE == "sqlite" else "memory://",
    )
    return app


async def clients(app: Any, first: int, cycles: int, sse: bool, concurrency: int) -> None:
    """`cycles` cycles by `concurrency` clients at once, numbered from `first`."""
    per = cycles // concurrency

    async def one(c: int) -> None:
        for k in range(per):
            await cycle(app, first + c * per + k, sse)

    await asyncio.gather(*(one(c) for c in range(concurrency)))


async def timed(
    cycles: int, rounds: int, concurrency: int = 1, floor: bool = False
) -> dict[str, list[float]]:
    """CPU a cycle (us) per mode, each round's; with `floor`, the floor app's too (``floor-json``,
    ``floor-sse``), each run right after nb_agents' of the same mode."""
    out: dict[str, list[float]] = {"json": [], "sse": []}
    with tempfile.TemporaryDirectory(prefix="asgi-cycle-") as work:
        apps = {"": build(work)}
        if floor:
            import floor_app

            floor_server = floor_app.Floor(f"sqlite:///{work}/floor.db")
            await floor_server.open()
            apps["floor-"] = floor_server
            out.update({"floor-json": [], "floor-sse": []})
        n = 0
        for app in apps.values():
            for i in range(200):
                await cycle(app, n, i % 2 == 1)
                n += 1
        for _ in range(rounds):
            for mode in ("json", "sse"):
                for label, app in apps.items():
                    t0 = time.process_time()
                    await clients(app, n, cycles, mode == "sse", concurrency)
                    n += cycles
                    out[label + mode].append(round((time.process_time() - t0) * 1e6 / cycles, 1))
    return out


async def profiled(mode: str, cycles: int, concurrency: int) -> None:
    import cProfile
    import pstats

    with tempfile.TemporaryDirectory(prefix="asgi-cycle-") as work:
        app = build(work)
        for i in range(200):
            await cycle(app, -i - 1, mode == "sse")
        prof = cProfile.Profile()
        prof.enable()
        await clients(app, 0, cycles, mode == "sse", concurrency)
        prof.disable()
    stats = pstats.Stats(prof)
    stats.sort_stats("cumulative").print_stats(60)
    stats.sort_stats("tottime").print_stats(40)


async def statements(mode: str, cycles: int) -> None:
    """Each SQLite statement's wall time in `execute` per cycle (every connection the store opens)."""
    import sqlite3
    from collections import defaultdict

    spent: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    class Timed(sqlite3.Connection):
        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            t0 = time.perf_counter_ns()
            try:
                return super().execute(sql, *args)
            finally:
                row = spent[" ".join(sql.split())[:64]]
                row[0] += time.perf_counter_ns() - t0
                row[1] += 1

    connect = sqlite3.connect
    sqlite3.connect = lambda *a, **k: connect(*a, **{"factory": Timed, **k})  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(prefix="asgi-cycle-") as work:
        app = build(work)
        for i in range(200):
            await cycle(app, -i - 1, mode == "sse")
        spent.clear()
        t0 = time.process_time()
        for n in range(cycles):
            await cycle(app, n, mode == "sse")
        cpu = (time.process_time() - t0) * 1e6 / cycles
    total = sum(ns for ns, _ in spent.values()) / cycles / 1000
    print(f"{mode}: {cpu:.0f} us CPU a cycle, {total:.0f} us of it in SQLite's execute ({total / cpu:.0%})")
    for sql, (ns, n) in sorted(spent.items(), key=lambda kv: -kv[1][0]):
        print(f"  {ns / cycles / 1000:7.1f} us  x{n / cycles:4.2f}  {sql}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", help="a directory holding another tree's nb_agents/ to time instead")
    parser.add_argument("--profile", choices=["json", "sse"])
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="clients at once, each body a loop pass late (timings, profile)",
    )
    parser.add_argument("--statements", choices=["json", "sse"], help="time each SQLite statement")
    parser.add_argument("--floor", action="store_true", help="time the floor's app too, alternated (timings)")
    parser.add_argument("--store", choices=["sqlite", "memory"], default="sqlite", help="nb_agents' store")
    opts = parser.parse_args()
    if opts.tree:
        sys.path.insert(0, opts.tree)
    sys.path.insert(0, os.path.join(HERE, "peers", "nb_agents"))
    import nb_agents

    global NETWORK, STORE
    NETWORK, STORE = opts.concurrency > 1, opts.store
    if opts.profile:
        asyncio.run(profiled(opts.profile, opts.cycles, opts.concurrency))
        return 0
    if opts.statements:
        asyncio.run(statements(opts.statements, opts.cycles))
        return 0
    res = asyncio.run(timed(opts.cycles, opts.rounds, opts.concurrency, opts.floor))
    print(json.dumps({"tree": os.path.dirname(os.path.dirname(nb_agents.__file__)), "us_per_cycle": res}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
