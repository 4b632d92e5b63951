"""Profile nb_agents on S1, S3 and S4 with py-spy (all threads) and pyinstrument.

Both profilers run the benchmark's own scenario code (``peers/nb_agents/bench.py``):

* **py-spy** samples every thread of a worker process at 1 kHz, so the SQLite
  store's worker threads are seen too. The summary keeps busy samples only
  (an event loop waiting in ``select``, an idle worker thread waiting on its
  condition, and module imports are dropped) and ranks frames by self time and
  by inclusive time, per thread kind.
* **pyinstrument** gives the main thread's call tree (asyncio-aware).

Output: ``benchmarks/results/profiles/<scenario>.txt``, headed by the git commit
profiled. Install the profilers into the project venv first::

    .venv/bin/pip install -r benchmarks/requirements-profile.txt
    .venv/bin/python benchmarks/profile_nb.py [--quick] [--scenarios S1 S3 S4-memory S4-sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "results", "profiles")
WORKER = os.path.join(HERE, "peers", "nb_agents", "bench.py")
IDLE_LEAVES = ("EpollSelector.select", "Condition.wait", "lock.acquire")


def _norm(frame: str) -> str:
    return re.sub(r"\((/[^()]*/(site-packages|python3\.\d+)/|" + re.escape(ROOT) + "/)", "(", frame)


def spy_summary(raw_path: str, top: int = 20) -> str:
    """Busy-sample ranking from py-spy's raw (collapsed) output, per thread kind."""
    leaf: dict[str, collections.Counter[str]] = {
        "main": collections.Counter(),
        "workers": collections.Counter(),
    }
    incl: dict[str, collections.Counter[str]] = {
        "main": collections.Counter(),
        "workers": collections.Counter(),
    }
    total: collections.Counter[str] = collections.Counter()
    with open(raw_path) as fh:
        for line in fh:
            stack, _, count = line.rstrip().rpartition(" ")
            frames = stack.split(";")
            if any("importlib._bootstrap" in f for f in frames) or frames[-1].startswith(IDLE_LEAVES):
                continue
            # py-spy does not always name the main thread; a worker is what runs under Thread.run
            threaded = any(f.startswith(("WorkerThread.run", "Thread.run")) for f in frames)
            who = "workers" if threaded else "main"
            n = int(count)
            total[who] += n
            leaf[who][_norm(frames[-1])] += n
            for key in {_norm(f) for f in frames[1:] if "nb_agents/" in f}:
                incl[who][key] += n
    out = []
    for who in ("main", "workers"):
        if not total[who]:
            continue
        out.append(
            f"### {who} thread{'s' if who == 'workers' else ''}: {total[who]} busy samples (1 ms each)"
        )
        out.append("self time (leaf frames):")
        out += [f"  {100 * v / total[who]:5.1f}%  {k}" for k, v in leaf[who].most_common(top)]
        out.append("inclusive time (nb_agents frames):")
        out += [f"  {100 * v / total[who]:5.1f}%  {k}" for k, v in incl[who].most_common(top)]
        out.append("")
    return "\n".join(out)


def run_spy(scenario: str, n: int, cycles: int, work: str) -> str:
    spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")
    if spy is None:
        return "(py-spy is not installed)"
    raw = os.path.join(work, f"{scenario}.raw")
    cmd = [spy, "record", "--threads", "-r", "1000", "-f", "raw", "-o", raw, "--", sys.executable, WORKER]
    cmd += [scenario, "--n", str(n), "--warmup", "50", "--cycles", str(cycles), "--workdir", work]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(raw):
        return f"(py-spy failed: {proc.stderr[-1500:]})"
    return spy_summary(raw)


def _worker() -> Any:
    spec = importlib.util.spec_from_file_location("nb_bench", WORKER)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_pyinstrument(fn: Any, args: argparse.Namespace) -> str:
    try:
        from pyinstrument import Profiler
    except ImportError:
        return "(pyinstrument is not installed)"
    prof = Profiler(interval=0.0005)
    prof.start()
    asyncio.run(fn(args))
    prof.stop()
    return str(prof.output_text(unicode=False, color=False, show_all=False))


def _commit() -> str:
    proc = subprocess.run(
        ["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True
    )
    return proc.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="profile nb_agents (py-spy over all threads, pyinstrument tree)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--scenarios", nargs="+", default=["S1", "S3", "S4-memory", "S4-sqlite"])
    opts = ap.parse_args(argv)
    w = _worker()
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp(prefix="nb-profile-")
    n = 300 if opts.quick else 3000
    cycles = 40 if opts.quick else 200
    fns = {"S1": w.s1, "S3": w.s3, "S4-memory": w.s4_memory, "S4-sqlite": w.s4_sqlite}
    try:
        for name in opts.scenarios:
            args = argparse.Namespace(n=n, warmup=50, cycles=cycles, workdir=tempfile.mkdtemp(dir=work))
            size = f"{cycles} cycles" if name.startswith("S4") else f"{n} iterations"
            text = [
                f"# nb_agents {name}, {size}, commit {_commit()}",
                "",
                "## py-spy, all threads",
                "",
                run_spy(name, n, cycles, tempfile.mkdtemp(dir=work)),
                "## pyinstrument, main thread call tree",
                "",
                run_pyinstrument(fns[name], args),
            ]
            path = os.path.join(OUT, f"{name}.txt")
            with open(path, "w") as fh:
                fh.write("\n".join(text))
            print("\n".join(text[:5]))
            print(f"[profile] {path}\n", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
