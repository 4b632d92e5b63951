"""An S5 server process: ``python -m nb_agents serve`` of ``peers/nb_agents/s5_app.py`` on loopback
(or the floor, `floor_app`, or Genkit's agent server, ``peers/genkit/s5_server.py``).

`Server` starts the real command line on a free port of 127.0.0.1 with the
store URL and the ledger file in its environment, waits until ``GET /``
answers, and always ends the process (SIGTERM, then SIGKILL after a bound).
Its CPU comes from ``/proc``, its garbage-collector pauses from the file
``s5_app.GcStats`` flushes about once a second.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
APP = os.path.join(HERE, "peers", "nb_agents", "s5_app.py")
FLOOR = os.path.join(HERE, "floor_app.py")
GENKIT = os.path.join(HERE, "peers", "genkit", "s5_server.py")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its threads (from /proc)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def command(kind: str, port: int, store_url: str, python: str | None = None) -> list[str]:
    """The command line of a server of `kind`: ``nb_agents`` (the CLI serving s5_app), ``floor``
    (`floor_app`), ``genkit`` (Genkit's agent server, `peers/genkit/s5_server.py`, in `python`)."""
    if kind == "nb_agents":
        cmd = [sys.executable, "-m", "nb_agents", "serve", f"{APP}:agent", "--host", "127.0.0.1"]
        return [*cmd, "--port", str(port), "--store", store_url, "--log-level", "warning"]
    if kind == "floor":
        return [sys.executable, FLOOR, "--port", str(port), "--store", store_url]
    if kind == "genkit":
        if python is None:
            raise RuntimeError("Genkit's server runs in the genkit peer's virtualenv: no python given")
        return [python, GENKIT, "--port", str(port)]
    raise ValueError(f"unknown server kind {kind!r}")


class Server:
    """A server of S5 on loopback (the nb_agents CLI by default); `stop` always ends the process."""

    def __init__(
        self,
        store_url: str,
        ledger: str,
        work: str,
        name: str,
        *,
        fault_tool_s: float = 0.0,
        kind: str = "nb_agents",
        python: str | None = None,
    ) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path = os.path.join(work, f"server-{name}.log")
        self.gc_path = gc_path = os.path.join(work, f"gc-{name}.json")
        cmd = command(kind, self.port, store_url, python)
        env = {**os.environ, "NB_BENCH_LEDGER": ledger, "NB_BENCH_GC_STATS": gc_path, "PYTHONUNBUFFERED": "1"}
        env["NB_BENCH_FAULT_TOOL_S"] = str(fault_tool_s)
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
            except urllib.error.HTTPError:
                return  # it answers (a 404 from a server with no route at /)
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the server did not answer within {START_TIMEOUT_S} s:\n{self.log_tail()}")

    def log_tail(self) -> str:
        self.log.flush()
        return read(self.log_path)[-3000:]

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

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.proc.pid)


def gc_stats(servers: list[Server]) -> dict[str, Any] | None:
    """The servers' GC pauses so far (each one's last flush, about once a second), summed; or None."""
    found = []
    for server in servers:
        try:
            found.append(json.loads(read(server.gc_path)))
        except (OSError, ValueError):
            continue
    if not found:
        return None
    return {
        "collections": [sum(d["collections"][g] for d in found) for g in range(3)],
        "total_ms": [round(sum(d["total_ms"][g] for d in found), 1) for g in range(3)],
        "max_ms": [round(max(d["max_ms"][g] for d in found), 1) for g in range(3)],
    }


def read(path: str) -> str:
    with open(path) as fh:
        return fh.read()
