"""Benchmark nb_agents against its peers in one run (``make bench``).

Usage::

    .venv/bin/python benchmarks/run.py                 # the full run (~10 min on 2 cores)
    .venv/bin/python benchmarks/run.py --quick         # a fast smoke of every path
    .venv/bin/python benchmarks/run.py --peers nb_agents langgraph --out /tmp/r.json
    .venv/bin/python benchmarks/run.py --profile       # then profile nb_agents (py-spy, pyinstrument)
    .venv/bin/python benchmarks/run.py --peers nb_agents --scenarios S5   # the HTTP server under load

nb_agents runs in the interpreter running this script (the project's
``.venv``); each peer runs in its own ``benchmarks/.venvs/<peer>`` built from
``peers/<peer>/requirements.txt``. Every scenario runs in a fresh process per
peer (``peers/<peer>/bench.py``), peers interleaved scenario by scenario so
that machine drift hits all of them alike. Each iteration checks its own
outcome; a failed check fails the run (exit 1) after the results are written.
S5 (the HTTP server under load) is not a worker scenario: ``s5_http.py`` runs a
server process and a load-generator process for it.
Numbers are reported, never asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import report  # noqa: E402
import s5_http  # noqa: E402
import venvs  # noqa: E402

PEERS = ("nb_agents", "genkit", "pydantic_ai", "langgraph", "openai_agents")
MODULES = {
    "nb_agents": "nb_agents",
    "genkit": "genkit.exp",
    "pydantic_ai": "pydantic_ai",
    "langgraph": "langgraph.graph",
    "openai_agents": "agents",
}
SCENARIOS = ("S1", "S2", "S3", "S3-sync", "S4-memory", "S4-sqlite", "S4-sqlite-sync", "S5")
WORKER_SCENARIOS = SCENARIOS[:-1]  # S5 is run by s5_http (a server and a load generator), not a worker
FORBIDDEN = ("ipywidgets", "starlette", "psycopg")
WORKER_TIMEOUT_S = 1800


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    ram_kib = 0
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
        with open("/proc/meminfo") as fh:
            ram_kib = next(int(ln.split()[1]) for ln in fh if ln.startswith("MemTotal"))
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu_model": cpu,
        "ram_gib": round(ram_kib / 1024 / 1024, 1),
        "os": f"{platform.system()} {platform.release()}",
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def git_state() -> dict[str, Any]:
    """The commit measured, and whether nb_agents/ had uncommitted changes (others may edit it)."""

    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", os.path.dirname(HERE), *args], capture_output=True, text=True)
        return proc.stdout.strip()

    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "nb_agents_dirty": bool(git("status", "--porcelain", "nb_agents")),
    }


def _time_cmd(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return (time.perf_counter() - t0) * 1000


def import_time(python: str, peer: str, runs: int) -> dict[str, Any]:
    """Fresh-interpreter import cost: median of ``import X`` minus median of a bare start."""
    module = MODULES[peer]
    try:
        # Compile the package's bytecode first, as `pip install` does for an installed
        # package: this environment sets PYTHONDONTWRITEBYTECODE, so an editable
        # install (nb_agents here) would otherwise be compiled from source on every run.
        top = module.split(".")[0]
        probe_dirs = (
            f"import importlib.util as u, os; s = u.find_spec({top!r}); "
            "print('\\n'.join(s.submodule_search_locations or [os.path.dirname(s.origin)]))"
        )
        dirs = subprocess.run([python, "-c", probe_dirs], check=True, capture_output=True, text=True)
        for folder in dirs.stdout.split():
            subprocess.run([python, "-m", "compileall", "-q", folder], check=False, capture_output=True)
        _time_cmd([python, "-c", f"import {module}"])  # warm the OS file cache
        bare, full = [], []
        for _ in range(runs):  # interleaved, so drift hits both alike
            bare.append(_time_cmd([python, "-c", "pass"]))
            full.append(_time_cmd([python, "-c", f"import {module}"]))
    except subprocess.CalledProcessError as exc:
        return {"status": "error", "module": module, "error": (exc.stderr or b"").decode()[-2000:]}
    q = statistics.quantiles(full, n=4, method="inclusive") if len(full) >= 4 else [min(full), 0, max(full)]
    out: dict[str, Any] = {
        "status": "ok",
        "module": module,
        "runs": runs,
        "bare_ms": round(statistics.median(bare), 1),
        "with_import_ms": round(statistics.median(full), 1),
        "net_ms": round(statistics.median(full) - statistics.median(bare), 1),
        "iqr_ms": round(q[2] - q[0], 1),
    }
    probe = (
        f"import sys, json; import {module}; "
        f"print(json.dumps([len(sys.modules), sorted(m for m in {FORBIDDEN!r} if m in sys.modules)]))"
    )
    count, loaded = json.loads(subprocess.run([python, "-c", probe], capture_output=True, text=True).stdout)
    out.update(modules_loaded=count, forbidden_loaded=loaded)
    if peer == "nb_agents":
        cum = []
        for _ in range(runs):
            err = subprocess.run(
                [python, "-X", "importtime", "-c", "import nb_agents"], capture_output=True, text=True
            )
            for ln in err.stderr.splitlines():
                parts = [x.strip() for x in ln.removeprefix("import time:").split("|")]
                if len(parts) == 3 and parts[2] == "nb_agents":
                    cum.append(int(parts[1]) / 1000)
        out["importtime_ms"] = round(statistics.median(cum), 1) if cum else None
    return out


def run_worker(
    python: str, peer: str, scenario: str, args: argparse.Namespace, workdir: str
) -> dict[str, Any]:
    script = os.path.join(HERE, "peers", peer, "bench.py")
    cmd = [python, script, scenario, "--n", str(args.n), "--warmup", str(args.warmup)]
    cmd += ["--cycles", str(args.cycles), "--workdir", workdir]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, cwd=HERE)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "error": f"no result within {WORKER_TIMEOUT_S} s"}
    wall = round(time.perf_counter() - t0, 2)
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("{")), None)
    if line is None:
        return {
            "status": "error",
            "error": f"worker exited {proc.returncode} without a result:\n{proc.stderr[-3000:]}",
        }
    out: dict[str, Any] = json.loads(line)
    out["wall_s"] = wall
    return out


def available(peer: str, scenario: str) -> bool:
    """Whether the peer's worker defines the scenario (a few are peer-specific variants)."""
    if scenario == "S3-sync":
        return peer == "nb_agents"
    if scenario == "S4-sqlite-sync":
        return peer == "langgraph"
    return True


def s5_http_under_load(args: argparse.Namespace) -> dict[str, Any]:
    """S5: the nb_agents server under load, classic and with faults (see s5_http.py)."""
    if "S5" not in args.scenarios or "nb_agents" not in args.peers:
        return {
            "status": "not run",
            "reason": "S5 was not among the scenarios (or nb_agents among the peers)",
        }
    argv = ["--clients", str(args.s5_clients)]
    if args.s5_seconds:
        argv += ["--duration", str(args.s5_seconds)]
    if args.s5_fault_seconds:
        argv += ["--fault-duration", str(args.s5_fault_seconds)]
    return s5_http.run(s5_http.options(argv, quick=args.quick))


def cycle_collector(quick: bool) -> dict[str, Any]:
    """What an approval cycle leaves to Python's cycle collector, and its time (`gc_per_cycle.py`)."""
    out: dict[str, Any] = {}
    for path in ("server", "inprocess"):
        cmd = [
            sys.executable,
            os.path.join(HERE, "gc_per_cycle.py"),
            path,
            "--cycles",
            "500" if quick else "3000",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, cwd=HERE)
        if proc.returncode != 0:
            out[path] = {"status": "error", "error": proc.stderr[-2000:]}
            continue
        out[path] = {"status": "ok", **json.loads(proc.stdout)}
        got = out[path]
        print(
            f"[bench] cycle collector, {path}: {got['cyclic_garbage_per_cycle']} cyclic objects and "
            f"{got['gc_us_per_cycle']} us of collection a cycle",
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a fast smoke: few iterations, 20 S4 cycles")
    ap.add_argument("--peers", nargs="+", choices=PEERS, default=list(PEERS))
    ap.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    ap.add_argument("--out", help="results JSON (default: benchmarks/results/<date>.json)")
    ap.add_argument("--n", type=int, help="timed iterations for S1-S3 (default 60; quick 10)")
    ap.add_argument("--warmup", type=int, help="warm-up iterations (default 10; quick 2)")
    ap.add_argument("--cycles", type=int, help="S4 cycles (default 200; quick 20)")
    ap.add_argument(
        "--import-runs", type=int, help="fresh interpreters per import timing (default 15; quick 3)"
    )
    ap.add_argument("--s5-seconds", type=float, help="S5 measured seconds per run (default 20; quick 3)")
    ap.add_argument("--s5-clients", type=int, default=50, help="S5 concurrent clients (default 50)")
    ap.add_argument(
        "--s5-fault-seconds",
        type=float,
        help="S5 with faults: measured seconds per run (default 60; quick 3)",
    )
    ap.add_argument("--no-readme", action="store_true", help="do not rewrite benchmarks/README.md")
    ap.add_argument("--profile", action="store_true", help="afterwards, profile nb_agents (profile.py)")
    args = ap.parse_args(argv)
    q = args.quick
    args.n = args.n or (10 if q else 60)
    args.warmup = args.warmup if args.warmup is not None else (2 if q else 10)
    args.cycles = args.cycles or (20 if q else 200)
    args.import_runs = args.import_runs or (3 if q else 15)
    now = dt.datetime.now(dt.UTC)
    out_path = args.out or os.path.join(HERE, "results", f"{now:%Y-%m-%d}{'-quick' if q else ''}.json")

    envs: dict[str, venvs.PeerEnv] = {}
    for peer in args.peers:
        envs[peer] = venvs.PeerEnv(peer, sys.executable) if peer == "nb_agents" else venvs.ensure(peer)
    results: dict[str, Any] = {
        "date": now.isoformat(timespec="seconds"),
        "mode": "quick" if q else "full",
        "machine": machine(),
        "python": platform.python_version(),
        "git": git_state(),
        "args": {k: getattr(args, k) for k in ("n", "warmup", "cycles", "import_runs")},
        "out": os.path.relpath(out_path, os.path.dirname(HERE)),
        "peer_order": list(args.peers),
        "peers": {
            p: {"status": "ok" if e.python else "install_failed", "error": e.error} for p, e in envs.items()
        },
        "import": {},
        "scenarios": {},
        "S5": {"status": "not run", "reason": "pending"},
    }
    for peer, env in envs.items():
        if env.python:
            print(f"[bench] import time: {peer}", flush=True)
            results["import"][peer] = import_time(env.python, peer, args.import_runs)

    failed: list[str] = []
    workroot = tempfile.mkdtemp(prefix="nb-bench-")
    try:
        for scenario in (s for s in args.scenarios if s in WORKER_SCENARIOS):
            for peer, env in envs.items():
                if not env.python or not available(peer, scenario):
                    continue
                workdir = os.path.join(workroot, f"{peer}-{scenario}")
                os.makedirs(workdir)
                res = run_worker(env.python, peer, scenario, args, workdir)
                results["scenarios"].setdefault(scenario, {})[peer] = res
                if "versions" in res:
                    results["peers"][peer]["versions"] = res["versions"]
                print(f"[bench] {scenario:<15} {peer:<14} {_brief(res)}", flush=True)
                if res["status"] == "check_failed" or (peer == "nb_agents" and res["status"] != "ok"):
                    failed.append(f"{scenario}/{peer}: {res.get('error')}")
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    results["S5"] = s5_http_under_load(args)
    if results["S5"]["status"] not in ("ok", "not run"):
        failed.append(f"S5/nb_agents: {results['S5']['status']}")
    if "nb_agents" in envs:
        results["gc"] = cycle_collector(q)

    results["summary"] = report.summarize(results)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as fh:
        json.dump(results, fh, indent=1)
    print(f"[bench] results: {out_path}")
    if not args.no_readme and not args.out:
        report.write_readme(results)
        print(f"[bench] table: {os.path.join(HERE, 'README.md')}")
    print(report.render(results))
    if args.profile:
        import profile_nb

        profile_nb.main(["--quick"] if q else [])
        if "S5" in args.scenarios:
            s5_http.main(
                ["--profile", "--suites", "classic", "--load-clients", "raw", "--out", os.devnull]
                + (["--quick"] if q else [])
            )
    if failed:
        print("[bench] FAILED CHECKS:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


def _brief(res: dict[str, Any]) -> str:
    if res.get("status") != "ok":
        return f"{res.get('status')}: {str(res.get('error'))[:200]}"
    if "stats" in res:
        st = res["stats"]
        rss = res["peak_rss_kib"] // 1024
        return f"median {st['median_us']:.0f} µs  IQR {st['iqr_us']:.0f} µs  rss {rss} MiB"
    return (
        f"first-10 {res['first']['median_us']:.0f} µs  last-10 {res['last']['median_us']:.0f} µs  "
        f"ratio {res['ratio_last_first']:.2f}  bytes {res.get('bytes_stored')}"
    )


if __name__ == "__main__":
    sys.exit(main())
