"""`nb-agents serve` in a process of its own, on a free port of 127.0.0.1.

The edge tests drive real server processes: a client times out on them, aborts
them, sends them hostile bytes, stops them with SIGSTOP. `Served` starts one,
waits until it answers, and stops it (killing it if it must).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
START_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """One ``python -m nb_agents serve`` process."""

    def __init__(
        self,
        tmp: Path,
        *,
        target: str = "edge_app:bank",
        store: str | None = None,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        port: int | None = None,
        preexec: object = None,
    ) -> None:
        self.tmp = tmp
        self.store_url = store
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp / f"serve-{self.port}.log"
        cmd = [sys.executable, "-m", "nb_agents", "serve", target, "--port", str(self.port)]
        cmd += ["--log-level", "warning", *args]
        if store is not None:
            cmd += ["--store", store]
        full_env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        full_env.update(env or {})
        self._out = open(self.log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            cmd, stdout=self._out, stderr=subprocess.STDOUT, env=full_env, cwd=tmp, preexec_fn=preexec
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nb-agents serve exited {self.proc.returncode}:\n{self.output()}")
            try:
                if httpx.get(self.url + "/", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nb-agents serve did not answer in {START_TIMEOUT} s:\n{self.output()}")

    def output(self) -> str:
        self._out.flush()
        return self.log.read_text(errors="replace")

    def stop_process(self) -> None:
        """SIGSTOP: the process is frozen (its heartbeat too) until `cont`."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def cont(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._out.close()
