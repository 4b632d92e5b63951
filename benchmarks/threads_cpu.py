"""Where a served store's CPU goes by thread: the event loop's thread and the others (issue 23).

One ``nb-agents serve`` (`s5_server.Server`, S5's app) on a fresh SQLite file or
a database of the test PostgreSQL server, under S5's load generator
(`s5_load.py`, raw HTTP/1.1, half the clients streaming). Over a window of the
load, each thread's user and system CPU (``/proc/<pid>/task/<tid>/stat``) and
the process's context switches (``/proc/<pid>/task/<tid>/status``) are read
before and after, and reported per approval cycle: the loop's thread, and the
rest (a store's worker threads) together. Reported, never asserted::

    .venv/bin/python benchmarks/threads_cpu.py [--store postgres|sqlite] [--clients 100] [--seconds 8]
        [--tree DIR]

``--tree``: serve another tree's ``nb_agents/`` (``git archive <commit> nb_agents | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import s5_pg
import s5_server

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")


def threads(pid: int) -> dict[str, tuple[float, float, int, int]]:
    """Each thread's user and system CPU seconds, and its voluntary and involuntary switches."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue  # the thread ended meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        out[tid] = (
            int(fields[11]) / TICK,
            int(fields[12]) / TICK,
            int(status["voluntary_ctxt_switches"]),
            int(status["nonvoluntary_ctxt_switches"]),
        )
    return out


def measure(store: str, clients: int, seconds: float, tree: str | None = None) -> dict[str, Any]:
    pg = s5_pg.Postgres() if store == "postgres" else None
    work = tempfile.mkdtemp(prefix="nb-threads-")
    url = pg.store_url() if pg is not None else f"sqlite:///{os.path.join(work, 'threads.db')}"
    root = s5_server.ROOT
    s5_server.ROOT = tree or root  # the server's working directory: its nb_agents package
    try:
        server = s5_server.Server(url, os.path.join(work, "ledger.txt"), work, store)
    finally:
        s5_server.ROOT = root
    try:
        server.wait_ready()
        load = [sys.executable, os.path.join(HERE, "s5_load.py"), "--url", server.base + "/bench"]
        load += [
            "--clients",
            str(clients),
            "--duration",
            str(seconds + 2),
            "--warmup",
            "2",
            "--client",
            "raw",
        ]
        gen = subprocess.Popen(load, stdout=subprocess.PIPE, text=True, cwd=HERE)
        time.sleep(3)  # the warm-up, and a second of the window
        before = threads(server.proc.pid)
        time.sleep(seconds)
        after = threads(server.proc.pid)
        stdout, _ = gen.communicate(timeout=seconds + 120)
    finally:
        server.stop()
    summary = json.loads(next(ln for ln in reversed(stdout.splitlines()) if ln.startswith("{")))
    cycles = summary["cycles_per_s"] * seconds
    per: dict[str, list[float]] = {"loop": [0.0] * 4, "other threads": [0.0] * 4}
    for tid, now in after.items():
        was = before.get(tid, (0.0, 0.0, 0, 0))
        into = per["loop" if tid == str(server.proc.pid) else "other threads"]
        for i in range(4):
            into[i] += now[i] - was[i]
    out: dict[str, Any] = {"store": store, "tree": tree or root, "clients": clients}
    out["cycles_per_s"] = summary["cycles_per_s"]
    for name, (user, system, vol, invol) in per.items():
        out[name] = {
            "user_ms_per_cycle": round(1000 * user / cycles, 3),
            "sys_ms_per_cycle": round(1000 * system / cycles, 3),
            "context_switches_per_cycle": round((vol + invol) / cycles, 1),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", choices=["postgres", "sqlite"], default="postgres")
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--tree", help="a directory holding another tree's nb_agents/ to serve")
    opts = ap.parse_args()
    print(json.dumps(measure(opts.store, opts.clients, opts.seconds, opts.tree), indent=1))


if __name__ == "__main__":
    main()
