"""PostgreSQL statements and transactions per approval cycle, counted exactly (issue 23).

A throwaway PostgreSQL server of its own (`s5_pg.Postgres` with ``counting``:
``shared_preload_libraries=pg_stat_statements``) and, for each server kind
(the floor, `floor_app`, and ``nb-agents serve``), a fresh database and a
fresh server process on it, driven over HTTP by the S5 load generator in
``--cycles`` mode (every client does exactly that many cycles, no re-sends):

1. a warm-up (one JSON and one SSE cycle: the pool's first connections, the
   schema, the LISTEN connection; then one cycle per client at the measured
   concurrency, which opens the rest of the pool), then 10.5 s idle, so that
   every backend has flushed its statistics (PostgreSQL 15 flushes an idle
   backend's counters after 10 s; a backend that exits flushes at once);
2. one JSON cycle, then one SSE cycle, then ``clients`` x ``cycles`` cycles
   concurrently (half of the clients streaming), then twice as many (what a
   cycle adds is the difference: `marginal`); before each,
   ``pg_stat_statements_reset()``; after each, idle again (or, for the last,
   the server stopped), then the statements (``pg_stat_statements``: calls, and
   the time PostgreSQL spent planning and executing them, by normalized text,
   ``BEGIN``/``COMMIT``/``ROLLBACK`` included) and the
   transactions (the database's ``xact_commit + xact_rollback`` delta) read
   from the ``postgres`` database, so the reading counts in neither.

Every run's ledger is checked as S5's are (one tool run per completed cycle).

Usage::

    .venv/bin/python benchmarks/pg_counts.py [--kinds floor nb_agents] [--clients 50] [--cycles 4] [--out F]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

import s5_pg
from s5_check import check_ledger
from s5_server import Server

HERE = os.path.dirname(os.path.abspath(__file__))
LOAD = os.path.join(HERE, "s5_load.py")
FLUSH_S = 10.5  # PostgreSQL 15: an idle backend's statistics reach the shared counters within 10 s
TX_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "START TRANSACTION")


def drive(server: Server, clients: int, cycles: int, sse: str, tag: str) -> dict[str, Any]:
    """`clients` x `cycles` approval cycles against `server` (raw HTTP/1.1); the load summary."""
    cmd = [sys.executable, LOAD, "--url", server.base + "/bench", "--clients", str(clients)]
    cmd += ["--cycles", str(cycles), "--warmup", "0", "--duration", "0", "--resend-every", "0"]
    cmd += ["--client", "raw", "--sse", sse, "--tag", tag]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=HERE)
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("{")), None)
    if line is None:
        raise RuntimeError(f"the load generator exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(line)
    if out["errors"] or out["failed_requests"]:
        raise RuntimeError(f"errors in the counted cycles: {out['error_samples'][:3]}")
    return out


def per_cycle(counts: dict[str, Any], before: dict[str, Any], cycles: int) -> dict[str, Any]:
    """Statements, transactions and new connections of one measurement, in all and per cycle."""
    stmts: dict[str, int] = counts["statements"]
    times: dict[str, tuple[float, float]] = counts.get("times", {})
    plan_ms = sum(t[0] for t in times.values())
    exec_ms = sum(t[1] for t in times.values())
    control = sum(n for q, n in stmts.items() if q.lstrip().upper().startswith(TX_CONTROL))
    total = sum(stmts.values())
    tx = counts["transactions"] - before["transactions"]
    conns = counts["connections"] - before["connections"]
    rollbacks = counts["rollbacks"] - before["rollbacks"]
    return {
        "cycles": cycles,
        "statements": total,
        "statements_without_begin_commit": total - control,
        "transactions": tx,
        "rolled_back": rollbacks,
        "connections_opened": conns,
        "per_cycle": {
            "statements": round(total / cycles, 2),
            "statements_without_begin_commit": round((total - control) / cycles, 2),
            "transactions": round(tx / cycles, 2),
            "rolled_back": round(rollbacks / cycles, 3),
            "connections_opened": round(conns / cycles, 3),
            "plan_us": round(plan_ms * 1000 / cycles, 1),
            "exec_us": round(exec_ms * 1000 / cycles, 1),
        },
        "by_statement": [
            {
                "calls": n,
                "per_cycle": round(n / cycles, 2),
                "plan_us_per_cycle": round(times.get(q, (0.0, 0.0))[0] * 1000 / cycles, 1),
                "exec_us_per_cycle": round(times.get(q, (0.0, 0.0))[1] * 1000 / cycles, 1),
                "query": " ".join(q.split())[:300],
            }
            for q, n in stmts.items()
        ],
    }


def measure(pg: s5_pg.Postgres, kind: str, work: str, clients: int, cycles: int) -> dict[str, Any]:
    """One server of `kind` on a fresh database: one JSON cycle, one SSE cycle, then many."""
    url = pg.store_url()
    db = pg.dbname(url)
    ledger = os.path.join(work, f"ledger-count-{kind}.txt")
    server = Server(url, ledger, work, f"count-{kind}", kind=kind)
    out: dict[str, Any] = {"kind": kind, "database": db}
    completed: list[str] = []
    try:
        server.wait_ready()
        for sse in ("none", "all"):
            completed += drive(server, 1, 1, sse, f"warm{sse}")["completed_cycle_ids"]
        # and one cycle per client at the measured concurrency: the pool opens its connections
        # now (a backend's start-up runs transactions of its own, which are no cycle's cost)
        completed += drive(server, clients, 1, "half", "warmhalf")["completed_cycle_ids"]
        plan = [("one_json_cycle", 1, 1, "none"), ("one_sse_cycle", 1, 1, "all")]
        # twice: what a cycle adds is the difference (PostgreSQL counts about one transaction more
        # per backend in a measurement, whatever the number of cycles: see `marginal`)
        plan.append((f"{clients}x{cycles}_cycles_concurrent", clients, cycles, "half"))
        plan.append((f"{clients}x{2 * cycles}_cycles_concurrent", clients, 2 * cycles, "half"))
        for label, n_clients, n_cycles, sse in plan:
            time.sleep(FLUSH_S)
            before = pg.counts(db)
            pg.reset_counts()
            load = drive(server, n_clients, n_cycles, sse, label.split("_")[0] + sse)
            completed += load["completed_cycle_ids"]
            if label == plan[-1][0]:
                server.stop()  # its backends exit, and flush their statistics
            else:
                time.sleep(FLUSH_S)
            out[label] = per_cycle(pg.counts(db), before, n_clients * n_cycles)
            out[label]["sse"] = sse
            print(f"[bench] pg counts {kind:<9} {label:<26} {brief(out[label])}", flush=True)
    finally:
        server.stop()
    out["marginal"] = marginal(out[plan[-2][0]], out[plan[-1][0]])
    out["exactly_once"] = check_ledger(ledger, completed, 0)
    out["status"] = "ok" if out["exactly_once"]["ok"] else "check_failed"
    return out


def marginal(short: dict[str, Any], long: dict[str, Any]) -> dict[str, Any]:
    """What one more cycle costs: the difference of two concurrent runs, per cycle of the difference.

    A measurement's transactions (pg_stat_database) exceed its statements' by about one per backend
    that was open in it, however many cycles ran: 1,600 autocommit INSERTs from 8 connections, and
    nothing else, count 1,608 (the floor's 50 x 4 reads 2.02 a cycle, nb_agents' 3.04 with exactly 3
    statements a cycle). The difference of a run and one twice as long leaves that out.
    """
    cycles = long["cycles"] - short["cycles"]
    keys = ("statements", "statements_without_begin_commit", "transactions", "rolled_back")
    extra = {k: long[k] - short[k] for k in keys}
    return {
        "cycles": cycles,
        **extra,
        "per_cycle": {k: round(v / cycles, 2) for k, v in extra.items()},
        "note": f"{long['cycles']} cycles minus {short['cycles']}",
    }


def brief(m: dict[str, Any]) -> str:
    pc = m["per_cycle"]
    return (
        f"{m['cycles']} cycle(s): {pc['statements']} statements/cycle "
        f"({pc['statements_without_begin_commit']} without BEGIN/COMMIT), "
        f"{pc['transactions']} transactions/cycle ({m['rolled_back']} rolled back), "
        f"{pc['connections_opened']} connections opened/cycle; the statements' time in PostgreSQL "
        f"{pc['plan_us']} us planning, {pc['exec_us']} us executing a cycle"
    )


def run(kinds: list[str], clients: int, cycles: int) -> dict[str, Any]:
    """The counts of every kind, on one throwaway server; ``status`` ``not run`` without PostgreSQL."""
    try:
        pg = s5_pg.Postgres(counting=True)
    except s5_pg.PostgresUnavailableError as exc:
        return {"status": "not run", "reason": str(exc)}
    work = tempfile.mkdtemp(prefix="nb-pgcount-")
    result: dict[str, Any] = {"status": "ok", "postgres": f"PostgreSQL {pg.version}", "kinds": {}}
    result["method"] = (
        "pg_stat_statements (track=all, utility statements included: but PostgreSQL 15 does not count a "
        "BEGIN/COMMIT that the client sent as a prepared statement, which psycopg does from a "
        "connection's 6th use of one, as the store did before issue 23) and pg_stat_database "
        "deltas (xact_commit + xact_rollback; sessions: connections opened), read from the postgres "
        "database after every backend flushed"
    )
    try:
        for kind in kinds:
            try:
                result["kinds"][kind] = measure(pg, kind, work, clients, cycles)
            except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
                result["kinds"][kind] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)
    bad = sorted({k["status"] for k in result["kinds"].values()} - {"ok"})
    result["status"] = bad[0] if bad else "ok"
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", nargs="+", choices=["floor", "nb_agents"], default=["floor", "nb_agents"])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--cycles", type=int, default=4, help="cycles per client in the concurrent measurement")
    ap.add_argument("--out", help="write the JSON here")
    args = ap.parse_args(argv)
    result = run(args.kinds, args.clients, args.cycles)
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    else:
        print(text)
    return 0 if result["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
