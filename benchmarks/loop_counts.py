"""What one in-process approval cycle costs the event loop and pydantic, counted exactly (issue 23).

The S3 cycle of `peers/nb_agents/bench.py` (``chat.send`` pauses on
``transfer``, the interrupt is approved with ``chat.resume``, the tool runs,
the model answers) on each store asked for, run on an instrumented event loop
(a subclass of asyncio's selector loop, in this script: nothing in
``nb_agents/`` changes) that counts, per cycle:

* tasks created (``create_task``, so ``ensure_future`` of a coroutine too) and
  futures created (``create_future``);
* timers (``call_at``, which ``call_later`` and ``asyncio.sleep`` with a
  delay use);
* callbacks scheduled (``call_soon``: every task step, future callback, and
  the like) and wake-ups from other threads (``call_soon_threadsafe``: a
  worker thread handing back a store operation's result);
* loop iterations (``_run_once``);

and then, in separate cycles under ``sys.setprofile`` (slow, so timed
nowhere), calls made on the loop's thread: pydantic validations
(``validate_python``/``validate_json``/``validate_strings`` of pydantic-core,
which ``BaseModel(...)``, ``model_validate`` and ``TypeAdapter`` all go
through), model inits (``BaseModel.__init__``), ``model_construct``,
``model_copy``, serializations (``to_python``/``to_json`` of pydantic-core),
``isinstance``, and SQLite statements (``execute``/``executemany`` of
sqlite3; ``BEGIN`` and ``COMMIT`` are statements too; a statement run in a
worker thread is not counted, see ``threadsafe_callbacks``).

With ``--http``, the same counts for a server (issue 23's "per cycle over
HTTP"): uvicorn serving S5's app on SQLite (``nb-agents serve``'s app and
HTTP protocol, `peers/nb_agents/s5_app.py`), or the floor (`floor_app`), in
this process on the counting loop, driven by S5's load generator in another
process (``--clients`` clients doing ``--cycles-per-client`` cycles each, no
re-sends), JSON and SSE apart.

Usage::

    .venv/bin/python benchmarks/loop_counts.py [--stores sqlite memory] [--cycles 200] [--out FILE]
    .venv/bin/python benchmarks/loop_counts.py --http [--clients 50] [--cycles-per-client 4]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "peers", "nb_agents"))

import common as c  # noqa: E402
import pydantic  # noqa: E402

import nb_agents as nba  # noqa: E402

LOOP_KEYS = (
    "tasks",
    "futures",
    "timers",
    "callbacks",
    "threadsafe_callbacks",
    "loop_iterations",
)
C_CALLS = {
    "validate_python": "pydantic_validations",
    "validate_json": "pydantic_validations",
    "validate_strings": "pydantic_validations",
    "to_python": "pydantic_serializations",
    "to_json": "pydantic_serializations",
    "isinstance": "isinstance",
    "execute": "sqlite_executes",  # sqlite3's Connection.execute and Cursor.execute
    "executemany": "sqlite_executes",
}
PY_CALLS = {
    pydantic.BaseModel.__init__.__code__: "model_inits",
    pydantic.BaseModel.model_construct.__func__.__code__: "model_constructs",  # type: ignore[attr-defined]
    pydantic.BaseModel.model_copy.__code__: "model_copies",
}


class CountingLoop(asyncio.SelectorEventLoop):
    """asyncio's selector loop, counting what it is asked to do."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()

    def create_task(self, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        self.counts["tasks"] += 1
        self.counts["task:" + getattr(coro, "__qualname__", type(coro).__name__)] += 1
        return super().create_task(coro, **kwargs)

    def call_at(self, when: float, callback: Any, *args: Any, context: Any = None) -> asyncio.TimerHandle:
        self.counts["timers"] += 1
        self.counts["timer:" + getattr(callback, "__qualname__", type(callback).__name__)] += 1
        return super().call_at(when, callback, *args, context=context)

    def create_future(self) -> asyncio.Future[Any]:
        self.counts["futures"] += 1
        return super().create_future()

    def call_soon(self, callback: Any, *args: Any, context: Any = None) -> asyncio.Handle:
        self.counts["callbacks"] += 1
        return super().call_soon(callback, *args, context=context)

    def call_soon_threadsafe(self, callback: Any, *args: Any, context: Any = None) -> asyncio.Handle:
        self.counts["threadsafe_callbacks"] += 1
        return super().call_soon_threadsafe(callback, *args, context=context)

    def _run_once(self) -> None:
        self.counts["loop_iterations"] += 1
        super()._run_once()  # type: ignore[misc]


class CallCounter:
    """`sys.setprofile` hook counting the calls of `C_CALLS` and `PY_CALLS` on this thread."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event == "c_call":
            name = C_CALLS.get(getattr(arg, "__name__", ""))
            if name is not None:
                self.counts[name] += 1
        elif event == "call":
            name = PY_CALLS.get(frame.f_code)
            if name is not None:
                self.counts[name] += 1


def make_store(kind: str, work: str) -> nba.SessionStore:
    if kind == "sqlite":
        return nba.SqliteSessionStore(os.path.join(work, "loop-counts.db"))
    return nba.InMemorySessionStore()


async def cycle(agent: nba.Agent) -> None:
    chat = agent.chat()
    res = await chat.send(c.PROMPTS["S3"])
    pause = res.interrupts[0]
    res = await chat.resume(restart=[pause.approve()])
    if res.text != c.EXPECT["S3"].text:
        raise RuntimeError(f"the cycle answered {res.text!r}")


async def measure(kind: str, cycles: int, warmup: int, work: str) -> dict[str, Any]:
    import bench  # peers/nb_agents/bench.py: S3's agent

    loop = asyncio.get_running_loop()
    assert isinstance(loop, CountingLoop)
    agent = bench.make_agent(make_store(kind, work))
    for _ in range(warmup):
        await cycle(agent)
    await asyncio.sleep(0.3)  # the heartbeat watcher of the warm-up ends
    loop.counts.clear()
    for _ in range(cycles):
        await cycle(agent)
    counted = dict(loop.counts)
    await asyncio.sleep(0.3)
    calls = CallCounter()
    profiled = max(1, cycles // 10)
    sys.setprofile(calls)
    try:
        for _ in range(profiled):
            await cycle(agent)
    finally:
        sys.setprofile(None)
    per = {k: round(counted.get(k, 0) / cycles, 2) for k in LOOP_KEYS}
    names = sorted(set(C_CALLS.values()) | set(PY_CALLS.values()))
    per.update({k: round(calls.counts.get(k, 0) / profiled, 2) for k in names})
    return {"store": kind, "cycles": cycles, "profiled_cycles": profiled, "per_cycle": per}


def run(stores: list[str], cycles: int, warmup: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "threads_at_start": threading.active_count(),
        "stores": {},
    }
    with tempfile.TemporaryDirectory(prefix="nb-loop-") as work:
        for kind in stores:
            with asyncio.Runner(loop_factory=CountingLoop) as runner:
                out["stores"][kind] = runner.run(measure(kind, cycles, warmup, work))
            print(f"[bench] loop counts {kind:<7} {json.dumps(out['stores'][kind]['per_cycle'])}", flush=True)
    return out


# -- over HTTP --------------------------------------------------------------------------
def _app(kind: str, store_url: str) -> Any:
    if kind == "floor":
        import floor_app

        return floor_app.Floor(store_url), {}
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    from nb_agents.server.cli import build_app, load_target
    from nb_agents.server.guard import default_max_connections, guarded_protocol

    app, _ = build_app(
        load_target(os.path.join(HERE, "peers", "nb_agents", "s5_app.py") + ":agent"), store=store_url
    )
    protocol = guarded_protocol(
        AutoHTTPProtocol, max_connections=default_max_connections(), header_timeout=10.0
    )
    return app, {"http": protocol}


async def _drive(base: str, clients: int, cycles: int, sse: str, tag: str) -> None:
    cmd = [os.path.join(HERE, "s5_load.py"), "--url", base + "/bench", "--clients", str(clients)]
    cmd += ["--cycles", str(cycles), "--warmup", "0", "--duration", "0", "--resend-every", "0"]
    cmd += ["--client", "raw", "--sse", sse, "--tag", tag]
    proc = await asyncio.create_subprocess_exec(sys.executable, *cmd, stdout=subprocess.PIPE, cwd=HERE)
    out, _ = await proc.communicate()
    line = out.decode().strip().splitlines()[-1]
    got = json.loads(line)
    if proc.returncode or got["errors"] or got["failed_requests"]:
        raise RuntimeError(f"the load generator failed: {got.get('error_samples')}")


async def measure_http(kind: str, clients: int, per_client: int, work: str) -> dict[str, Any]:
    import uvicorn
    from s5_server import free_port

    loop = asyncio.get_running_loop()
    assert isinstance(loop, CountingLoop)
    os.environ["NB_BENCH_LEDGER"] = os.path.join(work, f"ledger-{kind}.txt")
    app, extra = _app(kind, f"sqlite:///{os.path.join(work, kind + '.db')}")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **extra))
    serving = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    base = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {
        "server": kind,
        "store": "sqlite",
        "clients": clients,
        "cycles": clients * per_client,
    }
    try:
        await _drive(base, 2, 2, "half", "warm")
        for mode, sse in (("json", "none"), ("sse", "all")):
            await asyncio.sleep(0.3)
            loop.counts.clear()
            await _drive(base, clients, per_client, sse, mode)
            counted = dict(loop.counts)
            calls = CallCounter()
            sys.setprofile(calls)
            try:
                await _drive(base, 10, 3, sse, mode + "-profiled")
            finally:
                sys.setprofile(None)
            per = {k: round(counted.get(k, 0) / (clients * per_client), 2) for k in LOOP_KEYS}
            out[mode + "_by_origin"] = {
                k: round(n / (clients * per_client), 2)
                for k, n in sorted(counted.items(), key=lambda kv: -kv[1])
                if k.startswith(("task:", "timer:")) and n >= clients * per_client / 10
            }
            names = sorted(set(C_CALLS.values()) | set(PY_CALLS.values()))
            per.update({k: round(calls.counts.get(k, 0) / 30, 1) for k in names})
            out[mode] = per
            print(f"[bench] loop counts http {kind:<9} {mode:<4} {json.dumps(per)}", flush=True)
    finally:
        server.should_exit = True
        await serving
    return out


def run_http(clients: int, per_client: int) -> dict[str, Any]:
    out: dict[str, Any] = {"servers": {}}
    with tempfile.TemporaryDirectory(prefix="nb-loop-http-") as work:
        for kind in ("floor", "nb_agents"):
            with asyncio.Runner(loop_factory=CountingLoop) as runner:
                out["servers"][kind] = runner.run(measure_http(kind, clients, per_client, work))
    return out


def _commit() -> str:
    root = os.path.dirname(HERE)
    sha = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", root, "status", "--porcelain", "nb_agents"], capture_output=True, text=True
    )
    return sha.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stores", nargs="+", choices=["sqlite", "memory"], default=["sqlite", "memory"])
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--http", action="store_true", help="also count a server's loop per cycle over HTTP")
    ap.add_argument("--clients", type=int, default=50, help="--http: concurrent clients")
    ap.add_argument("--cycles-per-client", type=int, default=4, help="--http: cycles each client does")
    ap.add_argument("--out", help="write the JSON here")
    args = ap.parse_args(argv)
    result = run(args.stores, args.cycles, args.warmup)
    if args.http:
        result["http"] = run_http(args.clients, args.cycles_per_client)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
