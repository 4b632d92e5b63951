"""S5 over HTTP, floor / before / after in one interleaved run: a change's effect on the server's CPU.

``before`` is another tree of nb_agents (e.g. ``git archive <commit> nb_agents | tar -x -C DIR``),
served by the same command line, load generator, store and Python as ``after`` (this tree);
each round runs floor, before and after in a rotating order, JSON (no client streams) then SSE
(every client streams), 50 clients on the raw generator, every run's ledger checked for
exactly-once (`s5_http.run_one`). On a shared machine read it as a direction with a size::

    .venv/bin/python benchmarks/s5_ab.py --before /tmp/nb-before [--rounds 3] [--duration 8] [--out FILE]
    .venv/bin/python benchmarks/s5_ab.py --before /tmp/nb-before --store postgres   # tests/pg.py's server
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from typing import Any

import s5_pg
import s5_server
from s5_http import Spec, run_one

MODES = {"json": "none", "sse": "all"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="a directory holding the before tree's nb_agents/")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--store", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--out")
    opts = parser.parse_args()
    after_root = s5_server.ROOT
    targets = [
        ("floor", "floor", after_root),
        ("before", "nb_agents", opts.before),
        ("after", "nb_agents", after_root),
    ]
    runs: dict[str, list[dict[str, Any]]] = {}
    pg = s5_pg.Postgres() if opts.store == "postgres" else None  # PostgresUnavailableError says why not
    with tempfile.TemporaryDirectory(prefix="s5ab-") as work:
        for r in range(opts.rounds):
            for mode, sse in MODES.items():
                order = targets[r % 3 :] + targets[: r % 3]
                for label, kind, root in order:
                    spec = Spec(
                        f"ab{r}-{label}-{mode}", opts.store, "raw", servers=1, clients=opts.clients,
                        duration=opts.duration, warmup=opts.warmup, resend_every=0, kind=kind, sse=sse,
                    )  # fmt: skip
                    s5_server.ROOT = root  # the server's working directory: its nb_agents package
                    try:
                        res = run_one(spec, argparse.Namespace(profile=False), work, pg)
                    finally:
                        s5_server.ROOT = after_root
                    runs.setdefault(f"{label}-{mode}", []).append(res)
                    eo = res.get("exactly_once", {})
                    print(
                        f"[ab] round {r + 1} {label:<6} {mode:<4} {res.get('status')}: "
                        f"{res.get('cycles_per_s')} cycles/s, "
                        f"{res.get('server_cpu_ms_per_cycle')} ms cpu/cycle, "
                        f"errors {res.get('errors')}, ran twice {eo.get('ran_twice')}",
                        flush=True,
                    )
    summary: dict[str, Any] = {}
    for name, results in runs.items():
        ok = [x for x in results if x.get("status") == "ok"]
        summary[name] = {
            "runs": len(results),
            "ok": len(ok),
            "cycles_per_s": [x["cycles_per_s"] for x in ok],
            "server_cpu_ms_per_cycle": [x["server_cpu_ms_per_cycle"] for x in ok],
            "median_cycles_per_s": statistics.median([x["cycles_per_s"] for x in ok]) if ok else None,
            "median_cpu_ms": statistics.median([x["server_cpu_ms_per_cycle"] for x in ok]) if ok else None,
        }
    for mode in MODES:
        floor = summary.get(f"floor-{mode}", {})
        for label in ("before", "after"):
            row = summary.get(f"{label}-{mode}", {})
            if floor.get("median_cycles_per_s") and row.get("median_cycles_per_s"):
                row["ratio_cycles"] = round(row["median_cycles_per_s"] / floor["median_cycles_per_s"], 3)
                row["ratio_cpu"] = round(floor["median_cpu_ms"] / row["median_cpu_ms"], 3)
    print(json.dumps(summary, indent=1))
    if opts.out:
        with open(opts.out, "w") as fh:
            json.dump({"summary": summary, "runs": runs}, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
