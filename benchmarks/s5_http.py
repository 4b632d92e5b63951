"""S5: the nb_agents HTTP server under load, with exactly-once checked from a ledger.

For each store (in memory, SQLite) and each load generator (``httpx``: an
``httpx.AsyncClient`` per client; ``raw``: hand-written HTTP/1.1, cheap enough
that the server is the limit) this

1. starts the real command line, ``python -m nb_agents serve
   peers/nb_agents/s5_app.py:agent --host 127.0.0.1 --port P --store URL``, in
   its own process (uvicorn, one worker: the CLI has no ``--workers`` option),
   and waits until ``GET /`` answers;
2. runs the load generator (``s5_load.py``) in another process: 50 clients on
   loopback doing approval cycles for a fixed time, half of them streaming;
3. stops the server (SIGTERM, then SIGKILL after a bound), always;
4. reads the ledger the served ``transfer`` tool appends to and checks it holds
   exactly one line per completed cycle: no tool ran twice (the sampled
   duplicate resumes included), none ran for a cycle the client never saw end.

Optionally (``--profile``) py-spy samples the server process during the load,
and a summary of its busy samples goes to ``results/profiles/S5-<store>-<generator>.txt``.
Numbers are reported, never asserted; a correctness failure (an error answer,
a tool run twice) marks the result ``check_failed``.

Usage::

    .venv/bin/python benchmarks/s5_http.py [--quick] [--stores memory sqlite] [--load-clients httpx raw]
    .venv/bin/python benchmarks/s5_http.py --profile --load-clients raw   # py-spy on the server
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
APP = os.path.join(HERE, "peers", "nb_agents", "s5_app.py")
LOAD = os.path.join(HERE, "s5_load.py")
PROFILES = os.path.join(HERE, "results", "profiles")
STORES = ("memory", "sqlite")
LOAD_CLIENTS = ("httpx", "raw")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
IDLE_LEAVES = ("EpollSelector.select", "Condition.wait", "lock.acquire", "select (", "poll (")
WORKERS_NOTE = (
    "one uvicorn worker: `nb-agents serve` has no --workers option (it passes an app object to "
    "uvicorn.run, which needs an import string for workers), so --workers 2 was not measured"
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its threads (from /proc)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Server:
    """The nb_agents CLI serving s5_app on loopback; `stop` always ends the process."""

    def __init__(self, store_url: str, ledger: str, log_path: str, gc_path: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        cmd = [sys.executable, "-m", "nb_agents", "serve", f"{APP}:agent", "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--store", store_url, "--log-level", "warning"]
        env = {**os.environ, "NB_BENCH_LEDGER": ledger, "NB_BENCH_GC_STATS": gc_path, "PYTHONUNBUFFERED": "1"}
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.base + "/", timeout=2) as res:
                    if res.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the server did not answer within {START_TIMEOUT_S} s:\n{self.log_tail()}")

    def log_tail(self) -> str:
        self.log.flush()
        with open(self.log_path) as fh:
            return fh.read()[-3000:]

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT_S)
        self.log.close()
        return self.proc.returncode


def check_ledger(path: str, completed: list[str], resends: int) -> dict[str, Any]:
    """Exactly-once from the ledger: one line per completed cycle, none twice, none extra."""
    lines = []
    if os.path.exists(path):
        with open(path) as fh:
            lines = [ln.strip() for ln in fh if ln.strip()]
    counts = collections.Counter(lines)
    twice = sorted(k for k, n in counts.items() if n > 1)
    done = set(completed)
    missing = sorted(done - counts.keys())
    extra = sorted(counts.keys() - done)
    return {
        "ledger_entries": len(lines),
        "completed_cycles": len(completed),
        "resends_checked": resends,
        "ran_twice": len(twice),
        "ran_twice_samples": twice[:10],
        "missing": len(missing),
        "missing_samples": missing[:10],
        "extra": len(extra),
        "extra_samples": extra[:10],
        "ok": not twice and not missing and not extra and len(lines) == len(done),
    }


def _py_spy() -> str | None:
    return shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")


def run_one(store: str, client: str, opts: argparse.Namespace, work: str) -> dict[str, Any]:
    """A fresh server on `store` under load from `client`: the load summary, the ledger, the server's CPU."""
    name = f"{store}-{client}"
    ledger = os.path.join(work, f"ledger-{name}.txt")
    gc_path = os.path.join(work, f"gc-{name}.json")
    store_url = "memory://" if store == "memory" else f"sqlite:///{os.path.join(work, name + '.db')}"
    server = Server(store_url, ledger, os.path.join(work, f"server-{name}.log"), gc_path)
    spy: subprocess.Popen[bytes] | None = None
    raw = os.path.join(work, f"S5-{name}.raw")
    out: dict[str, Any] = {
        "store": store,
        "backend": "nba.InMemorySessionStore" if store == "memory" else "nba.SqliteSessionStore",
        "client": client,
    }
    try:
        server.wait_ready()
        cmd = [sys.executable, LOAD, "--url", server.base + "/bench", "--clients", str(opts.clients)]
        cmd += ["--duration", str(opts.duration), "--warmup", str(opts.warmup)]
        cmd += ["--resend-every", str(opts.resend_every), "--client", client]
        if opts.profile and _py_spy():
            seconds = str(int(opts.warmup + opts.duration + 1))
            spy_cmd = [_py_spy() or "py-spy", "record", "--pid", str(server.proc.pid), "--threads"]
            spy_cmd += ["--nonblocking", "-r", "250", "-f", "raw", "-o", raw, "-d", seconds]
            spy = subprocess.Popen(spy_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        cpu0, t0 = cpu_seconds(server.proc.pid), time.perf_counter()
        bound = opts.warmup + opts.duration + 120
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=bound, cwd=HERE)
        cpu1, t1 = cpu_seconds(server.proc.pid), time.perf_counter()
        line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("{")), None)
        if line is None:
            raise RuntimeError(f"the load generator exited {proc.returncode}:\n{proc.stderr[-3000:]}")
        out.update(json.loads(line))
        out["server_cpu_share"] = round((cpu1 - cpu0) / (t1 - t0), 3)
        out["server_cpu_ms_per_request"] = round((cpu1 - cpu0) * 1000 / max(1, out["total_requests"]), 3)
        out["server_gc"] = _gc_stats(gc_path)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
        out.update(status="error", error=f"{type(exc).__name__}: {exc}")
    finally:
        if spy is not None:
            try:
                spy.wait(30)
            except subprocess.TimeoutExpired:
                spy.kill()
                spy.wait()
        out["server_exit"] = server.stop()
    if out.get("status") == "error":
        out["server_log"] = _read(server.log_path)[-2000:]
        return out
    completed = out.pop("completed_cycle_ids")
    out["exactly_once"] = check_ledger(ledger, completed, out["resends"])
    out["status"] = "ok" if out["errors"] == 0 and out["exactly_once"]["ok"] else "check_failed"
    if spy is not None:
        out["profile"] = _write_profile(name, raw, spy, opts, out)
    return out


def _gc_stats(path: str) -> dict[str, Any] | None:
    """The server's GC pauses so far (its last flush, about once a second), or None."""
    try:
        data = json.loads(_read(path))
    except (OSError, ValueError):
        return None
    return {
        "collections": data["collections"],
        "total_ms": [round(x, 1) for x in data["total_ms"]],
        "max_ms": [round(x, 1) for x in data["max_ms"]],
    }


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read()


def run(opts: argparse.Namespace) -> dict[str, Any]:
    """S5 on each store and client; the harness's ``results["S5"]``."""
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
    }
    work = tempfile.mkdtemp(prefix="nb-s5-")
    try:
        for store in opts.stores:
            for client in opts.load_clients:
                name = f"{store}-{client}"
                print(f"[bench] S5 {name}: {opts.clients} clients, {opts.duration} s ...", flush=True)
                res = run_one(store, client, opts, work)
                result["runs"][name] = res
                print(f"[bench] S5 {name:<13} {brief(res)}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    statuses = {r["status"] for r in result["runs"].values()}
    result["status"] = "ok" if statuses <= {"ok"} else sorted(statuses - {"ok"})[0]
    return result


def brief(res: dict[str, Any]) -> str:
    if res.get("status") == "error":
        return f"error: {str(res.get('error'))[:300]}"
    eo = res["exactly_once"]
    return (
        f"{res['status']}: {res['cycles_per_s']} cycles/s, {res['requests_per_s']} req/s, "
        f"errors {res['errors']}, ledger {eo['ledger_entries']}/{eo['completed_cycles']} cycles, "
        f"ran twice {eo['ran_twice']}, server cpu {res['server_cpu_share']} "
        f"({res['server_cpu_ms_per_request']} ms/request), load generator cpu {res['client_cpu_share']}"
    )


# -- the server profile --------------------------------------------------------------------------


def _norm(frame: str) -> str:
    return re.sub(r"\((/[^()]*/(site-packages|python3\.\d+)/|" + re.escape(ROOT) + "/)", "(", frame)


def _package(frame: str) -> str:
    m = re.search(r"\(([^()/:]+)(/|\.py:)", frame)
    return m.group(1) if m else "?"


def spy_summary(raw_path: str, top: int = 25) -> str:
    """Busy samples of the server: self time by frame and by package, inclusive time by frame."""
    leaf: collections.Counter[str] = collections.Counter()
    pkg: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = idle = 0
    threads: collections.Counter[str] = collections.Counter()
    with open(raw_path) as fh:
        for line in fh:
            stack, _, count = line.rstrip().rpartition(" ")
            frames = [_norm(f) for f in stack.split(";")]
            n = int(count)
            if frames[-1].startswith(IDLE_LEAVES):
                idle += n
                continue
            total += n
            threads["worker threads" if any("WorkerThread.run" in f for f in frames) else "main thread"] += n
            leaf[frames[-1]] += n
            pkg[_package(frames[-1])] += n
            for key in set(frames[1:]):
                incl[key] += n
    if not total:
        return "(no busy samples)"
    pct = lambda v: f"{100 * v / total:5.1f}%"  # noqa: E731
    out = [f"{total} busy samples (4 ms each, all threads), {idle} idle samples dropped"]
    out += [", ".join(f"{k}: {pct(v).strip()}" for k, v in threads.most_common()), ""]
    out.append("self time by package (leaf frame's top-level module):")
    out += [f"  {pct(v)}  {k}" for k, v in pkg.most_common(15)]
    out += ["", "self time (leaf frames):"]
    out += [f"  {pct(v)}  {k}" for k, v in leaf.most_common(top)]
    out += ["", "inclusive time (frames below 95%):"]
    out += [f"  {pct(v)}  {k}" for k, v in incl.most_common(top * 4) if v < 0.95 * total][: top * 2]
    return "\n".join(out) + "\n"


def _commit() -> str:
    """The commit measured, with ``-dirty`` when nb_agents/ has uncommitted changes."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout.strip()

    dirty = "-dirty" if git("status", "--porcelain", "nb_agents") else ""
    return (git("rev-parse", "--short", "HEAD") or "unknown") + dirty


def _write_profile(
    name: str, raw: str, spy: subprocess.Popen[bytes], opts: argparse.Namespace, res: dict[str, Any]
) -> str:
    if not os.path.exists(raw):
        err = spy.stderr.read().decode()[-1500:] if spy.stderr else ""
        return f"py-spy wrote nothing: {err}"
    commit = _commit()
    os.makedirs(PROFILES, exist_ok=True)
    path = os.path.join(PROFILES, f"S5-{name}.txt")
    head = [
        f"# nb_agents server under S5 load ({name}: store-load generator), commit {commit}",
        "",
        f"{opts.clients} clients, {opts.warmup} + {opts.duration} s, py-spy --nonblocking at 250 Hz on the "
        f"server process. Under the profiler: {brief(res)}",
        "",
    ]
    with open(path, "w") as fh:
        fh.write("\n".join(head) + spy_summary(raw))
    return os.path.relpath(path, ROOT)


def options(argv: list[str] | None = None, *, quick: bool = False) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="S5: the nb_agents HTTP server under load")
    ap.add_argument("--quick", action="store_true", help="3 s instead of 20 s")
    ap.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--duration", type=float, help="measured seconds per store (default 20; quick 3)")
    ap.add_argument("--warmup", type=float, help="checked, untimed seconds first (default 2; quick 1)")
    ap.add_argument("--resend-every", type=int, default=10)
    ap.add_argument(
        "--load-clients",
        nargs="+",
        choices=LOAD_CLIENTS,
        default=list(LOAD_CLIENTS),
        help="httpx.AsyncClient and/or raw HTTP/1.1 (a cheaper generator, to find the server's limit)",
    )
    ap.add_argument("--profile", action="store_true", help="py-spy the server (results/profiles/S5-*.txt)")
    ap.add_argument("--out", help="write the JSON here (report.py RESULTS.json --s5 OUT merges it)")
    opts = ap.parse_args(argv if argv is not None else [])
    q = opts.quick or quick
    opts.duration = opts.duration or (3.0 if q else 20.0)
    opts.warmup = opts.warmup if opts.warmup is not None else (1.0 if q else 2.0)
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
