"""Turn a results dict into the summary (ratios, targets) and the README tables.

Pure functions over the JSON that `run.py` writes, so a results file can be
re-rendered later: ``python benchmarks/report.py benchmarks/results/<date>.json``
rewrites the generated part of ``benchmarks/README.md``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import s5_floor

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "README.md")
START, END = "<!-- results:start -->", "<!-- results:end -->"
US = "nb_agents"
TURN_SCENARIOS = ("S1", "S2", "S3")
S4_STORES = ("S4-memory", "S4-sqlite")
LABELS = {
    "S1": "S1 text turn",
    "S2": "S2 one tool call",
    "S3": "S3 approval cycle",
    "S3-sync": "S3 via `_sync` twins",
}


ISSUE23_US = {"S1": 80, "S3": 300}  # issue 23: an in-process turn, and an approval cycle with a store


def _ok(entry: dict[str, Any] | None) -> bool:
    return bool(entry) and entry.get("status") == "ok"


def _median(entry: dict[str, Any] | None) -> float | None:
    if entry is None or not _ok(entry) or "stats" not in entry:
        return None
    return float(entry["stats"]["median_us"])


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    """Ratios against each peer from the same run, and the issue's targets (reported, not asserted)."""
    sc = results.get("scenarios", {})
    summary: dict[str, Any] = {"turns": {}, "s4": {}}
    targets: dict[str, Any] = {}
    for name in TURN_SCENARIOS:
        ours = _median(sc.get(name, {}).get(US))
        peers = {p: _median(e) for p, e in sc.get(name, {}).items() if p != US and _median(e) is not None}
        row: dict[str, Any] = {"nb_agents_us": ours, "peer_over_nb": {}}
        for p, m in peers.items():
            row["peer_over_nb"][p] = round(m / ours, 2) if ours else None
        if peers and ours:
            fastest = min(peers, key=lambda p: peers[p] or 0.0)
            row["fastest_peer"] = fastest
            row["nb_over_fastest"] = round(ours / (peers[fastest] or 1.0), 3)
            targets[f"{name}: nb_agents <= 1/5 of fastest peer"] = row["nb_over_fastest"] <= 0.2
        if name in ISSUE23_US and ours:
            targets[f"{name}: nb_agents <= {ISSUE23_US[name]} us (issue 23)"] = ours <= ISSUE23_US[name]
        summary["turns"][name] = row
    for store in S4_STORES:
        for peer, e in sc.get(store, {}).items():
            for variant, entry in _s4_variants(peer, e, sc, store):
                if _ok(entry):
                    summary["s4"].setdefault(store, {})[variant] = {
                        "first_us": entry["first"]["median_us"],
                        "last_us": entry["last"]["median_us"],
                        "ratio": entry["ratio_last_first"],
                        "bytes": entry.get("bytes_stored"),
                        "store": entry.get("store"),
                    }
        ours = summary["s4"].get(store, {}).get(US)
        if ours:
            targets[f"{store}: last-10 cycles <= 1.3x first-10"] = ours["ratio"] <= 1.3
    sq = summary["s4"].get("S4-sqlite", {})
    if sq.get(US) and sq[US]["bytes"] is not None:
        others = [v["bytes"] for k, v in sq.items() if k != US and v["bytes"] is not None]
        if others:
            targets["S4-sqlite: nb_agents bytes below every peer's"] = sq[US]["bytes"] < min(others)
    imp = results.get("import", {}).get(US, {})
    if imp.get("status") == "ok":
        targets["import nb_agents < 150 ms"] = imp["net_ms"] < 150
        targets["import pulls no ipywidgets/starlette/psycopg"] = not imp.get("forbidden_loaded")
    served = (results.get("gc") or {}).get("server") or {}
    if served.get("status") == "ok":
        targets["a server cycle leaves nothing to the cycle collector"] = (
            served["cyclic_garbage_per_cycle"] == 0
        )
    targets.update(s5_targets(results.get("S5") or {}))
    targets.update(s5_floor.targets((results.get("S5") or {}).get("floor") or {}))
    summary["targets"] = targets
    return summary


S5_KINDS = ("send-json", "send-sse", "resume-json", "resume-sse", "resend-json", "resend-sse")


def _s5_tail_ratio(run: dict[str, Any], skip: tuple[str, ...] = ()) -> float | None:
    """The largest p99/p50 over the request kinds of one S5 run (less those in `skip`)."""
    lat = run.get("latency", {})
    ratios = [v["p99_ms"] / v["p50_ms"] for k, v in lat.items() if v.get("p50_ms") and k not in skip]
    return round(max(ratios), 2) if ratios else None


def s5_targets(s5: dict[str, Any]) -> dict[str, bool]:
    """Issue 7's S5 targets per run: no errors, no tool run twice, p99 under 10x p50 (reported only)."""
    out: dict[str, bool] = {}
    for name, run in (s5.get("runs") or {}).items():
        if run.get("status") == "error":
            out[f"S5 {name}: the run completed"] = False
            continue
        out[f"S5 {name}: no errors"] = run["errors"] == 0 and run["failed_requests"] == 0
        out[f"S5 {name}: no tool ran twice (ledger = completed cycles)"] = bool(run["exactly_once"]["ok"])
        ratio = _s5_tail_ratio(run)
        out[f"S5 {name}: p99 < 10x p50 for every request kind"] = ratio is not None and ratio < 10
    for name, run in ((s5.get("faults") or {}).get("runs") or {}).items():
        if run.get("status") != "ok" and "exactly_once" not in run:
            out[f"S5 faults {name}: the run completed"] = False
            continue
        eo = run["exactly_once"]
        out[f"S5 faults {name}: no errors"] = run["errors"] == 0 and run["failed_requests"] == 0
        out[f"S5 faults {name}: no duplicate tool run (ledger = cycles + retries)"] = bool(eo["ok"])
        ratio = _s5_tail_ratio(run, skip=("getSnapshot-json",))
        out[f"S5 faults {name}: p99 <= 10x p50 for every answer kind"] = ratio is not None and ratio <= 10
    fault_runs = (s5.get("faults") or {}).get("runs") or {}
    one, two = fault_runs.get("postgres-1x") or {}, fault_runs.get("postgres-2x") or {}
    if one.get("cycles_per_s") and two.get("cycles_per_s"):
        scale = two["cycles_per_s"] / one["cycles_per_s"]
        out[f"S5 faults: two servers on one PostgreSQL >= 1.6x one ({scale:.2f}x; issue 23)"] = scale >= 1.6
    return out


def _ms(v: float | None) -> str:
    return "—" if v is None else (f"{v:.0f}" if v >= 100 else f"{v:.1f}")


def render_s5(s5: dict[str, Any]) -> list[str]:
    """The S5 section: throughput and exactly-once per run, then latency per request kind."""
    lines = ["### S5: HTTP under load", ""]
    if s5.get("status") in ("not run", "not measured yet") or not s5.get("runs"):
        return [*lines, f"{s5.get('status')}: {s5.get('reason', '')}"]
    when = f"Run of **{s5['date']}**, commit `{s5['commit']}`. " if s5.get("date") else ""
    if s5.get("source"):
        when += f"Raw numbers: `{s5['source']}`. "
    lines += [
        f"{when}{s5['clients']} concurrent clients on loopback, each repeating S3's approval cycle "
        "(send → the turn pauses on `transfer` → resume with approval → the tool runs → the model answers), "
        f"a fresh conversation per cycle, for {s5['duration_s']:g} s after {s5['warmup_s']:g} s of checked "
        f"warm-up; every {s5['resend_every']}th cycle of a client re-sends its resume, which must answer "
        "the first result. Odd clients stream (SSE), even ones get one JSON body. Server: "
        f"{s5['server']}, a fresh process per run; {s5['workers_note']}. Load generator: its own process; "
        "`httpx` is an `httpx.AsyncClient` per client, `raw` hand-written HTTP/1.1 (about a fifth of the "
        "CPU per request, so the server is the limit). CPU is in cores (1.0 = one core busy).",
        "",
        "| store | load generator | cycles/s | requests/s | errors | tool runs / completed cycles | "
        "ran twice | resends (same result) | server CPU | server CPU per request | "
        "generator CPU | server full GCs (total, longest) |",
        "|---" * 12 + "|",
    ]
    for run in s5["runs"].values():
        if run.get("status") == "error":
            lines.append(
                f"| {run['store']} | {run['client']} | **error** | {str(run.get('error'))[:80]} |||||||||"
            )
            continue
        eo = run["exactly_once"]
        gc = run.get("server_gc") or {}
        gc_txt = (
            f"{gc['collections'][2]} ({gc['total_ms'][2]:.0f} ms, {gc['max_ms'][2]:.0f} ms)" if gc else "—"
        )
        lines.append(
            f"| {run['store']} | {run['client']} | {run['cycles_per_s']:.0f} | {run['requests_per_s']:.0f} | "
            f"{run['errors'] + run['failed_requests']} | "
            f"{eo['ledger_entries']:,} / {eo['completed_cycles']:,} | "
            f"{eo['ran_twice']} | {eo['resends_checked']:,} | {run['server_cpu_share']:.2f} | "
            f"{run['server_cpu_ms_per_request']:.2f} ms | {run['client_cpu_share']:.2f} | {gc_txt} |"
        )
    lines += [
        "",
        "Latency per request kind, client-side, p50 / p99 in ms (whole answer received; `resend` is the "
        "identical resume sent again):",
        "",
        "| store | load generator | "
        + " | ".join(k.replace("-", " (") + ")" for k in S5_KINDS)
        + " | whole cycle | largest p99/p50 |",
        "|---" * (len(S5_KINDS) + 4) + "|",
    ]
    for run in s5["runs"].values():
        if run.get("status") == "error":
            continue
        lat = run["latency"]
        cells = [f"{_ms(lat[k]['p50_ms'])} / {_ms(lat[k]['p99_ms'])}" if k in lat else "—" for k in S5_KINDS]
        cyc = run["cycle_latency"]
        lines.append(
            f"| {run['store']} | {run['client']} | "
            + " | ".join(cells)
            + f" | {_ms(cyc.get('p50_ms'))} / {_ms(cyc.get('p99_ms'))} | {_s5_tail_ratio(run)} |"
        )
    return lines


def render_s5_faults(faults: dict[str, Any]) -> list[str]:
    """Issue 11's S5 with faults: throughput, what the faults met, exactly-once and tails per run."""
    lines = ["### S5 with faults: timeouts, aborts, re-sends and retries", ""]
    if not faults.get("runs"):
        return [*lines, f"{faults.get('status', 'not run')}."]
    lines += [
        f"{faults['clients']} clients for {faults['duration_s']:g} s on the `{faults['load_client']}` "
        f"generator; {faults['fault_rate']:.0%} of cycles time out or abort while the tool sleeps "
        f"{faults['fault_tool_s']:g} s, then re-send the identical answer and, after a recorded "
        "`aborted`, send the explicit retry (see above). `runs` counts the tool's ledger lines: each "
        "cycle once, plus one per retry. The tail ratio leaves out `getSnapshot`, the abort clients' "
        "own polling read (shown apart).",
        "",
        "| run | servers | cycles/s | errors | ledger / expected | ran twice | fault cycles | "
        "timeouts | aborts that landed | retries | re-sends | largest p99/p50 (answers) | "
        "cycle p50 / p99 | getSnapshot p50 / p99 | server CPU |",
        "|---" * 15 + "|",
    ]
    for name, run in faults["runs"].items():
        if "exactly_once" not in run:
            lines.append(
                f"| {name} | | **{run.get('status')}** | {str(run.get('reason', ''))[:80]} |" + " |" * 11
            )
            continue
        eo, cyc = run["exactly_once"], run["cycle_latency"]
        snap = run["latency"].get("getSnapshot-json", {})
        landed = run["fault_outcomes"].get("abort: the resume answered aborted", 0)
        lines.append(
            f"| {name} | {run['servers']} | {run['cycles_per_s']:.0f} | "
            f"{run['errors'] + run['failed_requests']} | "
            f"{eo['ledger_entries']:,} / {eo['expected_entries']:,} | "
            f"{eo['ran_twice']} | {run['fault_cycles']:,} | {run['client_timeouts']:,} | {landed:,} | "
            f"{eo['explicit_retries']:,} | {eo['resends_checked']:,} | "
            f"{_s5_tail_ratio(run, skip=('getSnapshot-json',))} | "
            f"{_ms(cyc.get('p50_ms'))} / {_ms(cyc.get('p99_ms'))} | "
            f"{_ms(snap.get('p50_ms'))} / {_ms(snap.get('p99_ms'))} | "
            f"{sum(run['server_cpu_share_each']):.2f} |"
        )
    return lines


def _s4_variants(peer: str, entry: dict[str, Any], sc: dict[str, Any], store: str) -> list[tuple[str, Any]]:
    out = [(peer, entry)]
    if store == "S4-sqlite":
        extra = sc.get("S4-sqlite-sync", {}).get(peer)
        if extra:
            out.append((f"{peer} (sync API)", extra))
    return out


def _us(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.0f} µs"


def _cell(entry: dict[str, Any] | None) -> str:
    if not entry:
        return "not run"
    if entry.get("status") != "ok":
        return f"**{entry.get('status')}**"
    st = entry["stats"]
    return f"{_us(st['median_us'])} (IQR {_us(st['iqr_us'])})"


def render(results: dict[str, Any]) -> str:
    """The generated README section (Markdown)."""
    m = results["machine"]
    sc = results["scenarios"]
    summary = results.get("summary") or summarize(results)
    peers = results["peer_order"]
    dirty = " (with uncommitted changes)" if results["git"]["nb_agents_dirty"] else ""
    lines = [
        f"Run of **{results['date']}** on {m['cpu_model']}, {m['cores']} cores, {m['ram_gib']} GiB RAM, "
        f"{m['os']}; Python {results['python']}; nb_agents at commit `{results['git']['commit']}`"
        f"{dirty}. Mode: `{results['mode']}` "
        f"(S1-S3: {results['args']['n']} timed iterations after {results['args']['warmup']} warm-up; "
        f"S4: {results['args']['cycles']} cycles). Raw numbers: `{results['out']}`.",
        "",
        "Versions: "
        + "; ".join(
            f"{p}: " + ", ".join(f"{k} {v}" for k, v in results["peers"][p].get("versions", {}).items())
            for p in peers
            if results["peers"][p].get("versions")
        )
        + ".",
        "",
        "### S1-S3: one turn, median per iteration (IQR), lower is better",
        "",
        "| scenario | " + " | ".join(peers) + " | nb_agents / fastest peer |",
        "|---" * (len(peers) + 2) + "|",
    ]
    for name in (*TURN_SCENARIOS, "S3-sync"):
        if name not in sc:
            continue
        row = summary["turns"].get(name, {})
        ratio = (
            f"{row['nb_over_fastest']:.3f} (vs {row['fastest_peer']})" if row.get("nb_over_fastest") else ""
        )
        lines.append(
            f"| {LABELS[name]} | " + " | ".join(_cell(sc[name].get(p)) for p in peers) + f" | {ratio} |"
        )
    lines += ["", "Peer time ÷ nb_agents time (how many times slower than nb_agents):", ""]
    for name in TURN_SCENARIOS:
        row = summary["turns"].get(name, {})
        if row.get("peer_over_nb"):
            lines.append(f"- {name}: " + ", ".join(f"{p} {r}x" for p, r in row["peer_over_nb"].items()))
    lines += [
        "",
        f"### S4: {results['args']['cycles']} approval cycles in one session, stateless per request",
        "",
        "| store | peer | backend | first 10 cycles | last 10 cycles | last/first | bytes (db + wal) |",
        "|---|---|---|---|---|---|---|",
    ]
    for store in S4_STORES:
        for variant, row in summary["s4"].get(store, {}).items():
            b = f"{row['bytes']:,}" if row["bytes"] is not None else "—"
            lines.append(
                f"| {store[3:]} | {variant} | {row['store'] or ''} | {_us(row['first_us'])} | "
                f"{_us(row['last_us'])} | {row['ratio']:.2f} | {b} |"
            )
        for peer, e in sc.get(store, {}).items():
            if not _ok(e):
                lines.append(f"| {store[3:]} | {peer} | | **{e.get('status')}** | | | |")
    lines += [
        "",
        "### Import time and memory",
        "",
        "| peer | module | import (net of bare interpreter) | peak RSS of the S3 process |",
        "|---|---|---|---|",
    ]
    for p in peers:
        imp = results["import"].get(p, {})
        rss = sc.get("S3", {}).get(p, {}).get("peak_rss_kib")
        imp_txt = f"{imp['net_ms']:.0f} ms (IQR {imp['iqr_ms']:.0f})" if imp.get("status") == "ok" else "—"
        rss_txt = f"{rss / 1024:.0f} MiB" if rss else "—"
        lines.append(f"| {p} | `{imp.get('module', '')}` | {imp_txt} | {rss_txt} |")
    us = results["import"].get(US, {})
    if us.get("importtime_ms") is not None:
        lines += [
            "",
            f"`python -X importtime`: `nb_agents` cumulative {us['importtime_ms']:.0f} ms; "
            f"loaded of ipywidgets/starlette/psycopg: {us.get('forbidden_loaded') or 'none'}.",
        ]
    lines += ["", *render_s5(results.get("S5") or {"status": "not run"})]
    lines += ["", *render_s5_faults((results.get("S5") or {}).get("faults") or {"status": "not run"})]
    lines += ["", *s5_floor.render((results.get("S5") or {}).get("floor") or {"status": "not run"})]
    lines += ["", "### Targets from issues 7 and 23 (reported, never asserted)", ""]
    for k, v in summary["targets"].items():
        lines.append(f"- {k}: {'met' if v else '**not met**'}")
    failures = [f"{p}: {e['error']}" for p, e in results["peers"].items() if e.get("error")]
    for name, by_peer in sc.items():
        failures += [f"{name} / {p}: {e.get('error')}" for p, e in by_peer.items() if e.get("status") != "ok"]
    if failures:
        lines += ["", "### Peers or scenarios that could not run", ""]
        lines += [f"- {f.splitlines()[0] if f else f}" for f in failures]
    return "\n".join(lines) + "\n"


def write_readme(results: dict[str, Any], path: str = README) -> None:
    """Replace the generated section of the README (between the markers)."""
    with open(path) as fh:
        text = fh.read()
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    with open(path, "w") as fh:
        fh.write(f"{head}{START}\n{render(results)}{END}{tail}")


def main(argv: list[str]) -> None:
    """``report.py RESULTS.json [--s5 S5.json] [--s5-faults FAULTS.json]``: rewrite the README's section.

    ``--s5`` takes the S5 section from another run (``run.py --scenarios S5`` or ``s5_http.py --out``),
    so a full run of S1-S4 and a later S5 run show together, each with its own date and commit;
    ``--s5-faults`` takes only the runs with faults (``s5_http.py --suites faults --out``).
    """
    if not argv or len(argv) % 2 != 1:
        sys.exit("usage: report.py RESULTS.json [--s5 S5.json] [--s5-faults FAULTS.json]")
    with open(argv[0]) as fh:
        data = json.load(fh)
    for flag, path in zip(argv[1::2], argv[2::2], strict=True):
        with open(path) as fh:
            other = json.load(fh)
        other = other.get("S5", other)  # a run.py results file, or s5_http's own JSON
        source = os.path.relpath(os.path.abspath(path), os.path.dirname(HERE))
        if flag == "--s5":
            data["S5"] = {**other, "source": source}
        elif flag == "--s5-faults":  # only the fault runs, beside the classic ones already there
            data.setdefault("S5", {"status": "not run"})["faults"] = {**other["faults"], "source": source}
        else:
            sys.exit(f"unknown option {flag}")
    data["summary"] = summarize(data)  # the targets as this report reads them now
    write_readme(data)
    print(f"rewrote the results section of {README}")


if __name__ == "__main__":
    main(sys.argv[1:])
