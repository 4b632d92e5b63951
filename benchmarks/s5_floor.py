"""S5 against the floor (issue 23): nb_agents, the floor server and Genkit's server, interleaved.

The suite ``floor`` of `s5_http`. Targets, each a fresh server process per run
(`s5_http.run_one`, so every run has the same load generator, CPU accounting
and ledger check as the other S5 suites):

* ``floor-sqlite``, ``floor-postgres``: `floor_app`, the least a durable
  approval server must do, with nb_agents' wire shapes;
* ``nb_agents-sqlite``, ``nb_agents-postgres``: ``nb-agents serve`` of S5's app;
* ``genkit-memory``: Genkit Python's agent server (``genkit_fastapi``) with
  its ``InMemorySessionStore`` (Genkit Python ships no SQL store), from the
  genkit peer's virtualenv (built as ``make bench`` builds it; reported as not
  run when it cannot be).

Each target runs once in JSON mode (no client streams) and once in SSE mode
(every client streams), 50 clients on the raw generator, no re-sends (Genkit
has no replay of an answer), for ``--floor-rounds`` rounds; each round runs
every (target, mode) once, the order rotated from round to round, so machine
drift hits all alike. Reported per (target, mode): the median over rounds of
cycles/s and of the server's CPU per cycle; and the ratios nb_agents/floor per
store and mode, which issue 23 asks to reach 0.5 on SQLite. PostgreSQL is
the test suite's throwaway server, a fresh database per run. The exact
PostgreSQL statement and transaction counts per cycle (`pg_counts`) run first,
unless ``--no-floor-counts``.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import pg_counts
import s5_pg
import venvs

TARGETS = (
    ("floor", "sqlite"),
    ("nb_agents", "sqlite"),
    ("floor", "postgres"),
    ("nb_agents", "postgres"),
    ("genkit", "memory"),
)
MODES = {"json": "none", "sse": "all"}  # mode: s5_load --sse


def run(opts: argparse.Namespace, work: str, run_one: Any) -> dict[str, Any]:
    """The floor suite; `run_one` is `s5_http.run_one` (passed in: s5_http imports this module)."""
    from s5_http import Spec  # here: s5_http imports this module

    out: dict[str, Any] = {
        "status": "ok",
        "clients": opts.clients,
        "duration_s": opts.floor_duration,
        "warmup_s": opts.warmup,
        "rounds": opts.floor_rounds,
        "load_client": "raw",
        "resend_every": 0,
        "modes": {"json": "no client streams", "sse": "every client streams"},
        "not_run": {},
        "runs": {},
    }
    targets = [t for t in TARGETS if f"{t[0]}-{t[1]}" in opts.floor_targets]
    if opts.floor_counts:
        kinds = [k for k in ("floor", "nb_agents") if f"{k}-postgres" in opts.floor_targets]
        print(f"[bench] S5 floor: PostgreSQL statements and transactions per cycle ({', '.join(kinds)}) ...")
        out["pg_counts"] = pg_counts.run(kinds, opts.clients, opts.floor_count_cycles)
    python = None
    if any(kind == "genkit" for kind, _ in targets):
        env = venvs.ensure("genkit")
        python = env.python
        if python is None:
            out["not_run"]["genkit-memory"] = f"the genkit peer's virtualenv could not be built: {env.error}"
            targets = [t for t in targets if t[0] != "genkit"]
    pg: s5_pg.Postgres | None = None
    if any(store == "postgres" for _, store in targets):
        try:
            pg = s5_pg.Postgres()
            out["postgres"] = f"PostgreSQL {pg.version} (tests/pg.py's throwaway server)"
        except s5_pg.PostgresUnavailableError as exc:
            for kind, store in targets:
                if store == "postgres":
                    out["not_run"][f"{kind}-{store}"] = str(exc)
            targets = [t for t in targets if t[1] != "postgres"]
    plan = [(kind, store, mode) for kind, store in targets for mode in MODES]
    try:
        for r in range(opts.floor_rounds):
            shift = r % max(1, len(plan))
            for kind, store, mode in plan[shift:] + plan[:shift]:
                name = f"{kind}-{store}-{mode}"
                spec = Spec(
                    f"floor{r}-{name}",
                    store,
                    "raw",
                    servers=1,
                    clients=opts.clients,
                    duration=opts.floor_duration,
                    warmup=opts.warmup,
                    resend_every=0,
                    kind=kind,
                    sse=MODES[mode],
                    python=python if kind == "genkit" else None,
                )
                print(f"[bench] S5 floor round {r + 1}/{opts.floor_rounds}: {name} ...", flush=True)
                res = run_one(spec, opts, work, pg)
                out["runs"].setdefault(name, []).append(res)
                print(f"[bench] S5 floor {name:<26} {_brief(res)}", flush=True)
    finally:
        if pg is not None:
            pg.stop()
    out["summary"] = summarize(out["runs"])
    statuses = {r["status"] for runs in out["runs"].values() for r in runs} - {"ok"}
    if out.get("pg_counts", {}).get("status") not in (None, "ok", "not run"):
        statuses.add(out["pg_counts"]["status"])
    out["status"] = sorted(statuses)[0] if statuses else "ok"
    return out


def _brief(res: dict[str, Any]) -> str:
    if res.get("status") == "error":
        return f"error: {str(res.get('error'))[:300]}"
    eo = res["exactly_once"]
    return (
        f"{res['status']}: {res['cycles_per_s']} cycles/s, "
        f"server {res['server_cpu_ms_per_cycle']} ms cpu/cycle, errors {res['errors']}, "
        f"ledger {eo['ledger_entries']}/{eo['expected_entries']}, ran twice {eo['ran_twice']}"
    )


def _med(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians over rounds per (target, mode), and the ratios against the floor."""
    rows: dict[str, Any] = {}
    for name, results in runs.items():
        ok = [r for r in results if r.get("status") == "ok"]
        rows[name] = {
            "rounds_ok": len(ok),
            "rounds": len(results),
            "cycles_per_s": _med([r["cycles_per_s"] for r in ok]),
            "cycles_per_s_each": [r.get("cycles_per_s") for r in results],
            "server_cpu_ms_per_cycle": _med([r["server_cpu_ms_per_cycle"] for r in ok]),
            "db_cpu_ms_per_cycle": _med([r["db_cpu_ms_per_cycle"] for r in ok if "db_cpu_ms_per_cycle" in r]),
            "cycle_p50_ms": _med([r["cycle_latency"]["p50_ms"] for r in ok if r["cycle_latency"]["n"]]),
            "cycle_p99_ms": _med([r["cycle_latency"]["p99_ms"] for r in ok if r["cycle_latency"]["n"]]),
        }
    ratios: dict[str, float | None] = {}

    def ratio(a: str, b: str) -> float | None:
        x, y = rows.get(a, {}).get("cycles_per_s"), rows.get(b, {}).get("cycles_per_s")
        return round(x / y, 3) if x and y else None

    for mode in MODES:
        for store in ("sqlite", "postgres"):
            ours, floor = f"nb_agents-{store}-{mode}", f"floor-{store}-{mode}"
            ratios[f"nb_agents/floor {store} {mode}"] = ratio(ours, floor)
        ratios[f"genkit(memory)/floor sqlite {mode}"] = ratio(f"genkit-memory-{mode}", f"floor-sqlite-{mode}")
        ratios[f"nb_agents sqlite/genkit(memory) {mode}"] = ratio(
            f"nb_agents-sqlite-{mode}", f"genkit-memory-{mode}"
        )
    return {"rows": rows, "ratios": ratios}


def targets(floor: dict[str, Any]) -> dict[str, bool]:
    """Issue 23's targets that a floor run shows (reported, never asserted)."""
    out: dict[str, bool] = {}
    if not floor or floor.get("status") == "not run":
        return out
    for mode in MODES:
        r = floor.get("summary", {}).get("ratios", {}).get(f"nb_agents/floor sqlite {mode}")
        if r is not None:
            out[f"S5 floor: nb_agents/floor >= 0.5 on SQLite ({mode})"] = r >= 0.5
    for name, results in floor.get("runs", {}).items():
        out[f"S5 floor {name}: 0 errors and exactly-once in every round"] = all(
            r.get("status") == "ok" for r in results
        )
    counts = (floor.get("pg_counts") or {}).get("kinds", {}).get("nb_agents", {})
    # what a cycle adds (two concurrent runs' difference), else the one concurrent run there is
    many = counts.get("marginal") or next((v for k, v in counts.items() if k.endswith("_concurrent")), None)
    if many:
        pc = many["per_cycle"]
        out["S5 floor: PostgreSQL <= 8 statements per cycle"] = pc["statements"] <= 8
        out["S5 floor: PostgreSQL <= 3 transactions per cycle"] = pc["transactions"] <= 3
    return out


def render(floor: dict[str, Any]) -> list[str]:
    """The README section: throughput against the floor, then the PostgreSQL counts."""
    lines = ["### S5 against the floor (issue 23)", ""]
    if not floor or floor.get("status") == "not run":
        return [*lines, f"Not run: {(floor or {}).get('reason', 'the floor suite was not asked for')}."]
    lines += [
        f"{floor['clients']} clients (raw generator), {floor['rounds']} interleaved round(s) of "
        f"{floor['warmup_s']:g} + {floor['duration_s']:g} s per target and mode, no re-sends; "
        "JSON: no client streams, SSE: every client streams. Medians over rounds.",
        "",
        "| target | mode | cycles/s | server CPU ms/cycle | DB CPU ms/cycle | cycle p50 / p99 ms "
        "| rounds ok |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in floor["summary"]["rows"].items():
        target, mode = name.rsplit("-", 1)
        db = row["db_cpu_ms_per_cycle"]
        lines.append(
            f"| {target} | {mode} | {row['cycles_per_s']} | {row['server_cpu_ms_per_cycle']} | "
            f"{db if db is not None else '—'} | {row['cycle_p50_ms']} / {row['cycle_p99_ms']} | "
            f"{row['rounds_ok']}/{row['rounds']} |"
        )
    for name, why in floor.get("not_run", {}).items():
        lines.append(f"| {name} | — | not run: {why} | | | | |")
    ratios = floor["summary"]["ratios"].items()
    lines += ["", "Ratios (cycles/s): " + "; ".join(f"{k} **{v}**" for k, v in ratios)]
    counts = floor.get("pg_counts") or {}
    if counts.get("status") == "not run":
        return [*lines, "", f"PostgreSQL counts: not run: {counts.get('reason')}."]
    if counts.get("kinds"):
        lines += ["", render_counts(counts)]
    return lines


def render_counts(counts: dict[str, Any]) -> str:
    rows = [
        f"PostgreSQL statements and transactions per cycle ({counts.get('postgres')}; "
        f"{counts.get('method')}):",
        "",
        "| server | measurement | statements | of which not BEGIN/COMMIT | transactions | rolled back "
        "| their time in PostgreSQL, planning / executing |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, m in counts["kinds"].items():
        if m.get("status") == "error":
            rows.append(f"| {kind} | error: {m['error'][:200]} | | | | | |")
            continue
        for label, v in m.items():
            if isinstance(v, dict) and "per_cycle" in v:
                pc = v["per_cycle"]
                name = f"a cycle more ({v['note']})" if label == "marginal" else label.replace("_", " ")
                times = f"{pc['plan_us']} / {pc['exec_us']} us" if "exec_us" in pc else "—"
                rows.append(
                    f"| {kind} | {name} | {pc['statements']} | {pc['statements_without_begin_commit']} | "
                    f"{pc['transactions']} | {pc.get('rolled_back', '—')} | {times} |"
                )
    return "\n".join(rows)
