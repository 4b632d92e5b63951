"""S5: the nb_agents HTTP server under load, with exactly-once checked from a ledger.

Three suites of runs, each run a fresh set of processes:

* **classic** (issue 7): each store (in memory, SQLite) under each load
  generator (``httpx``: an ``httpx.AsyncClient`` per client; ``raw``:
  hand-written HTTP/1.1, cheap enough that the server is the limit); 50
  clients for 20 s, every 10th cycle re-sending its resume;
* **floor** (issue 23, `s5_floor`): nb_agents on SQLite and PostgreSQL, the
  floor server (`floor_app`) on both, and Genkit's server, interleaved, JSON and
  SSE, with the ratios to the floor; and the exact PostgreSQL statement and
  transaction counts per cycle (`pg_counts`);
* **faults** (issue 11): 100 clients for 60 s (raw generator), 10% of the
  cycles timing out or aborting after their answer went out, then re-sending
  it and, when the recorded outcome is ``aborted``/``failed``, sending the
  explicit retry (`s5_faults`); on SQLite with one server, on PostgreSQL with
  one server, and on PostgreSQL with two servers sharing the database, the
  clients spread over both ports (the scale-out).

Each run

1. starts the real command line, ``python -m nb_agents serve
   peers/nb_agents/s5_app.py:agent --host 127.0.0.1 --port P --store URL``, once
   per server (uvicorn, one worker each: the CLI has no ``--workers`` option),
   and waits until each answers ``GET /``; PostgreSQL is the test suite's
   throwaway server (`s5_pg`), a fresh database per run;
2. runs the load generator (``s5_load.py``) in another process;
3. stops the servers (SIGTERM, then SIGKILL after a bound), always;
4. reads the ledger the served ``transfer`` tool appends to (`s5_check`): one
   run per completed cycle plus one per explicit retry, one idempotency key per
   answer; no tool ran twice, none ran for a cycle the client never saw end.

Optionally (``--profile``) py-spy samples the (first) server process during
the load, and a summary goes to ``results/profiles/S5-<store>-<generator>.txt``.
Numbers are reported, never asserted; a correctness failure (an error answer,
a tool run twice) marks the result ``check_failed``.

Usage::

    .venv/bin/python benchmarks/s5_http.py [--quick] [--suites classic faults] [--out FILE]
    .venv/bin/python benchmarks/s5_http.py --suites faults --fault-stores postgres --scale-out 2
    .venv/bin/python benchmarks/s5_http.py --profile --suites classic --load-clients raw   # py-spy
    .venv/bin/python benchmarks/s5_http.py --suites floor [--quick] [--floor-targets floor-sqlite ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

import s5_floor
import s5_pg
import s5_profile
from s5_check import check_ledger
from s5_server import Server, gc_stats, read

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LOAD = os.path.join(HERE, "s5_load.py")
STORES = ("memory", "sqlite")
FAULT_STORES = ("sqlite", "postgres")
LOAD_CLIENTS = ("httpx", "raw")
SUITES = ("classic", "faults", "floor")
BACKENDS = {
    "memory": "nba.InMemorySessionStore",
    "sqlite": "nba.SqliteSessionStore",
    "postgres": "nba.PostgresSessionStore",
}
OTHER_BACKENDS = {
    ("floor", "sqlite"): "floor_app.py: sqlite3 on the loop",
    ("floor", "postgres"): "floor_app.py: psycopg async connections",
    ("genkit", "memory"): "genkit.exp.InMemorySessionStore (Genkit Python has no SQL store)",
}
WORKERS_NOTE = (
    "one uvicorn worker per server: `nb-agents serve` has no --workers option (it passes an app object "
    "to uvicorn.run, which needs an import string for workers), so --workers 2 was not measured"
)


@dataclass(frozen=True)
class Spec:
    """One run: a store, a load generator, how many servers and clients, and the share of faults."""

    name: str
    store: str
    client: str
    servers: int
    clients: int
    duration: float
    warmup: float
    resend_every: int
    fault_rate: float = 0.0
    fault_tool_s: float = 0.0
    kind: str = "nb_agents"  # or "floor" (floor_app.py), "genkit" (Genkit's server, in `python`)
    sse: str = "half"  # which clients stream: half (odd ones), all, none
    python: str | None = None


def _cpu(servers: list[Server]) -> list[float]:
    return [s.cpu_seconds() for s in servers]


def _store_url(spec: Spec, work: str, pg: s5_pg.Postgres | None) -> str:
    if spec.store == "memory":
        return "memory://"
    if spec.store == "sqlite":
        return f"sqlite:///{os.path.join(work, spec.name + '.db')}"
    assert pg is not None
    return pg.store_url()


def run_one(spec: Spec, opts: argparse.Namespace, work: str, pg: s5_pg.Postgres | None) -> dict[str, Any]:
    """Fresh servers on the spec's store under load: the load summary, the ledger check, the CPU."""
    ledger = os.path.join(work, f"ledger-{spec.name}.txt")
    backend = BACKENDS[spec.store] if spec.kind == "nb_agents" else OTHER_BACKENDS[spec.kind, spec.store]
    out: dict[str, Any] = {"store": spec.store, "backend": backend, "client": spec.client}
    out.update(kind=spec.kind, sse=spec.sse)
    out.update(servers=spec.servers, clients=spec.clients, fault_rate=spec.fault_rate)
    servers: list[Server] = []
    spy: s5_profile.Spy | None = None
    try:
        url = _store_url(spec, work, pg)
        for i in range(spec.servers):
            servers.append(
                Server(
                    url,
                    ledger,
                    work,
                    f"{spec.name}-{i}",
                    fault_tool_s=spec.fault_tool_s,
                    kind=spec.kind,
                    python=spec.python,
                )
            )
        for server in servers:
            server.wait_ready()
        cmd = [sys.executable, LOAD, "--url", *(s.base + "/bench" for s in servers)]
        cmd += ["--clients", str(spec.clients), "--duration", str(spec.duration)]
        cmd += ["--warmup", str(spec.warmup), "--resend-every", str(spec.resend_every)]
        cmd += ["--client", spec.client, "--fault-rate", str(spec.fault_rate)]
        cmd += ["--fault-tool-s", str(spec.fault_tool_s), "--sse", spec.sse]
        exe = s5_profile.py_spy()
        if opts.profile and exe:
            raw = os.path.join(work, f"S5-{spec.name}.raw")
            spy = s5_profile.Spy(exe, servers[0].proc.pid, spec.warmup + spec.duration + 1, raw)
        cpu0, db0, t0 = _cpu(servers), pg.cpu_seconds() if pg else 0.0, time.perf_counter()
        bound = spec.warmup + spec.duration + 120
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=bound, cwd=HERE)
        cpu1, db1, t1 = _cpu(servers), pg.cpu_seconds() if pg else 0.0, time.perf_counter()
        line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("{")), None)
        if line is None:
            raise RuntimeError(f"the load generator exited {proc.returncode}:\n{proc.stderr[-3000:]}")
        out.update(json.loads(line))
        out["server_cpu_share"] = round((sum(cpu1) - sum(cpu0)) / (t1 - t0), 3)
        out["server_cpu_share_each"] = [
            round((b - a) / (t1 - t0), 3) for a, b in zip(cpu0, cpu1, strict=True)
        ]
        out["server_cpu_ms_per_request"] = round(
            (sum(cpu1) - sum(cpu0)) * 1000 / max(1, out["total_requests"]), 3
        )
        all_cycles = max(1, len(out["completed_cycle_ids"]))  # the warm-up's too, as the CPU is
        out["server_cpu_ms_per_cycle"] = round((sum(cpu1) - sum(cpu0)) * 1000 / all_cycles, 3)
        if spec.store == "postgres":
            out["db_cpu_share"] = round((db1 - db0) / (t1 - t0), 3)
            out["db_cpu_ms_per_cycle"] = round((db1 - db0) * 1000 / all_cycles, 3)
        out["server_gc"] = gc_stats(servers)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
        out.update(status="error", error=f"{type(exc).__name__}: {exc}")
    finally:
        if spy is not None:
            spy.wait()
        out["server_exit"] = [server.stop() for server in servers]
    if out.get("status") == "error":
        out["server_log"] = "\n".join(read(s.log_path)[-2000:] for s in servers)
        return out
    completed = out.pop("completed_cycle_ids")
    retried = out.pop("retried_cycles")
    paths = out.pop("retry_paths")
    out["exactly_once"] = eo = check_ledger(ledger, completed, out["resends"], retried)
    for key in ("retried_cycles_whose_aborted_attempt_ran_no_tool_samples", "missing_samples"):
        eo[key] = [f"{c} ({paths.get(c.split(':')[0], 'no retry')})" for c in eo[key]]
    clean = out["errors"] == 0 and out["failed_requests"] == 0 and out["exactly_once"]["ok"]
    out["status"] = "ok" if clean else "check_failed"
    if spy is not None:
        head = [
            f"# nb_agents server under S5 load ({spec.name}: store-load generator), commit {_commit()}",
            "",
            f"{spec.clients} clients, {spec.warmup} + {spec.duration} s, py-spy --nonblocking at 250 Hz on "
            f"the server process. Under the profiler: {brief(out)}",
            "",
        ]
        out["profile"] = s5_profile.write_profile(spec.name, spy, head)
    return out


def specs(opts: argparse.Namespace) -> tuple[list[Spec], list[Spec]]:
    """The classic runs and the fault runs the options ask for."""
    common = {"warmup": opts.warmup, "resend_every": opts.resend_every}
    classic = []
    if "classic" in opts.suites:
        for store in opts.stores:
            for client in opts.load_clients:
                name = f"{store}-{client}"
                classic.append(
                    Spec(
                        name, store, client, servers=1, clients=opts.clients, duration=opts.duration, **common
                    )
                )
    faults = []
    if "faults" in opts.suites:
        layouts = [(s, 1) for s in opts.fault_stores]
        if "postgres" in opts.fault_stores and opts.scale_out > 1:
            layouts.append(("postgres", opts.scale_out))
        for store, n in layouts:
            faults.append(
                Spec(
                    f"{store}-{n}x",
                    store,
                    opts.fault_load_client,
                    servers=n,
                    clients=opts.fault_clients,
                    duration=opts.fault_duration,
                    fault_rate=opts.fault_rate,
                    fault_tool_s=opts.fault_tool_s,
                    **common,
                )
            )
    return classic, faults


def run(opts: argparse.Namespace) -> dict[str, Any]:
    """S5's suites; the harness's ``results["S5"]`` (``runs``: classic, ``faults.runs``: issue 11)."""
    classic, faulty = specs(opts)
    result: dict[str, Any] = {
        "status": "ok",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "clients": opts.clients,
        "duration_s": opts.duration,
        "warmup_s": opts.warmup,
        "resend_every": opts.resend_every,
        "server": "python -m nb_agents serve (uvicorn with h11 and the asyncio loop), loopback",
        "workers": 1,
        "workers_note": WORKERS_NOTE,
        "runs": {},
        "faults": {"status": "not run", "runs": {}},
        "floor": {"status": "not run", "reason": "the floor suite was not asked for"},
    }
    if faulty:
        result["faults"] = {
            "status": "ok",
            "clients": opts.fault_clients,
            "duration_s": opts.fault_duration,
            "warmup_s": opts.warmup,
            "fault_rate": opts.fault_rate,
            "fault_tool_s": opts.fault_tool_s,
            "load_client": opts.fault_load_client,
            "specs": [asdict(s) for s in faulty],
            "runs": {},
        }
    work = tempfile.mkdtemp(prefix="nb-s5-")
    pg: s5_pg.Postgres | None = None
    try:
        for spec in classic:
            _run_printed(spec, opts, work, None, result["runs"])
        for spec in faulty:
            if spec.store == "postgres" and pg is None:
                try:
                    pg = s5_pg.Postgres()
                    result["faults"]["postgres"] = f"PostgreSQL {pg.version} (tests/pg.py's throwaway server)"
                except s5_pg.PostgresUnavailableError as exc:
                    result["faults"]["runs"][spec.name] = {"status": "not run", "reason": str(exc)}
                    print(f"[bench] S5 {spec.name}: not run: {exc}", flush=True)
                    continue
            _run_printed(spec, opts, work, pg, result["faults"]["runs"])
        if "floor" in opts.suites:
            result["floor"] = s5_floor.run(opts, work, run_one)
    finally:
        if pg is not None:
            pg.stop()
        shutil.rmtree(work, ignore_errors=True)
    every = [*result["runs"].values(), *result["faults"]["runs"].values(), result["floor"]]
    statuses = {r["status"] for r in every} - {"ok", "not run"}
    result["status"] = sorted(statuses)[0] if statuses else "ok"
    if faulty:
        bad = {r["status"] for r in result["faults"]["runs"].values()} - {"ok", "not run"}
        result["faults"]["status"] = sorted(bad)[0] if bad else "ok"
    return result


def _run_printed(
    spec: Spec, opts: argparse.Namespace, work: str, pg: s5_pg.Postgres | None, into: dict[str, Any]
) -> None:
    faults = f", {spec.fault_rate:.0%} faulty" if spec.fault_rate else ""
    print(
        f"[bench] S5 {spec.name}: {spec.servers} server(s), {spec.clients} clients, {spec.duration:g} s"
        f"{faults} ...",
        flush=True,
    )
    into[spec.name] = res = run_one(spec, opts, work, pg)
    print(f"[bench] S5 {spec.name:<13} {brief(res)}", flush=True)


def brief(res: dict[str, Any]) -> str:
    if res.get("status") == "error":
        return f"error: {str(res.get('error'))[:300]}"
    eo = res["exactly_once"]
    retries = (
        f", {res['fault_cycles']} fault cycles, {res['retries']} retries" if res.get("fault_rate") else ""
    )
    return (
        f"{res['status']}: {res['cycles_per_s']} cycles/s, {res['requests_per_s']} req/s, "
        f"errors {res['errors']}, ledger {eo['ledger_entries']}/{eo['expected_entries']} expected{retries}, "
        f"ran twice {eo['ran_twice']}, server cpu {res['server_cpu_share']} "
        f"({res['server_cpu_ms_per_request']} ms/request), load generator cpu {res['client_cpu_share']}"
    )


def _commit() -> str:
    """The commit measured, with ``-dirty`` when nb_agents/ has uncommitted changes."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout.strip()

    dirty = "-dirty" if git("status", "--porcelain", "nb_agents") else ""
    return (git("rev-parse", "--short", "HEAD") or "unknown") + dirty


def options(argv: list[str] | None = None, *, quick: bool = False) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="S5: the nb_agents HTTP server under load")
    ap.add_argument(
        "--quick", action="store_true", help="3 s per run instead of 20 s (classic), 60 s (faults)"
    )
    ap.add_argument("--suites", nargs="+", choices=SUITES, default=list(SUITES))
    ap.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES), help="classic suite")
    ap.add_argument("--clients", type=int, default=50, help="classic suite")
    ap.add_argument("--duration", type=float, help="classic: measured seconds per run (default 20; quick 3)")
    ap.add_argument("--warmup", type=float, help="checked, untimed seconds first (default 2; quick 1)")
    ap.add_argument("--resend-every", type=int, default=10)
    ap.add_argument(
        "--load-clients",
        nargs="+",
        choices=LOAD_CLIENTS,
        default=list(LOAD_CLIENTS),
        help="classic: httpx.AsyncClient and/or raw HTTP/1.1 (cheaper, to find the server's limit)",
    )
    ap.add_argument("--fault-stores", nargs="+", choices=FAULT_STORES, default=list(FAULT_STORES))
    ap.add_argument("--fault-clients", type=int, default=100)
    ap.add_argument(
        "--fault-duration", type=float, help="faults: measured seconds per run (default 60; quick 3)"
    )
    ap.add_argument("--fault-rate", type=float, default=0.1, help="share of cycles that time out or abort")
    ap.add_argument(
        "--fault-tool-s",
        type=float,
        default=0.1,
        help="seconds the tool sleeps in a fault cycle (default 0.1)",
    )
    ap.add_argument("--fault-load-client", choices=LOAD_CLIENTS, default="raw")
    ap.add_argument(
        "--scale-out", type=int, default=2, help="faults: also N servers on one PostgreSQL (default 2; 1: no)"
    )
    ap.add_argument("--floor-duration", type=float, help="floor: measured s per run (default 8; quick 2)")
    ap.add_argument("--floor-rounds", type=int, help="floor: interleaved rounds (default 2; quick 1)")
    ap.add_argument(
        "--floor-targets",
        nargs="+",
        choices=[f"{k}-{s}" for k, s in s5_floor.TARGETS],
        default=[f"{k}-{s}" for k, s in s5_floor.TARGETS],
    )
    ap.add_argument("--floor-count-cycles", type=int, default=4, help="floor: counted cycles per client (PG)")
    ap.add_argument(
        "--no-floor-counts", dest="floor_counts", action="store_false", help="floor: skip the PG counts"
    )
    ap.add_argument("--profile", action="store_true", help="py-spy the server (results/profiles/S5-*.txt)")
    ap.add_argument("--out", help="write the JSON here (report.py RESULTS.json --s5 OUT merges it)")
    opts = ap.parse_args(argv if argv is not None else [])
    q = opts.quick or quick
    opts.duration = opts.duration or (3.0 if q else 20.0)
    opts.fault_duration = opts.fault_duration or (3.0 if q else 60.0)
    opts.warmup = opts.warmup if opts.warmup is not None else (1.0 if q else 2.0)
    opts.floor_duration = opts.floor_duration or (2.0 if q else 8.0)
    opts.floor_rounds = opts.floor_rounds or (1 if q else 2)
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = options(sys.argv[1:] if argv is None else argv)
    result = run(opts)
    if opts.out:
        with open(opts.out, "w") as fh:
            json.dump(result, fh, indent=1)
        print(f"[bench] S5 results: {opts.out}")
    else:
        print(json.dumps(result, indent=1))
    return 0 if result["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
