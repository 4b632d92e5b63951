"""`make demo` (scripts/lab_demo.sh): refuses a busy port before printing a URL; the news toast
is off, kernels start without the "TCP without encryption" warning, and saved notebooks keep records."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from jupyter_env import e2e_missing

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "lab_demo.sh"
BIN = str(Path(sys.executable).parent)

pytestmark = pytest.mark.skipif(bool(e2e_missing("jupyterlab")), reason="the demo needs the jupyter extra")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_busy_port_is_refused_before_any_url_is_printed() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            ["bash", str(SCRIPT)], env={**os.environ, "PORT": str(port), "BIN": BIN},
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert proc.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use" in proc.stderr and f"PORT={port + 1}" in proc.stderr
    assert "http://" not in proc.stdout


def test_the_demo_starts_quietly_with_the_news_toast_off(tmp_path: Path) -> None:
    port, token = free_port(), "t" * 32
    log = tmp_path / "demo.log"
    env = {**os.environ, "PORT": str(port), "BIN": BIN, "JUPYTER_TOKEN": token, "TMPDIR": str(tmp_path)}
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "runtime")
    with log.open("wb") as sink:
        proc = subprocess.Popen(["bash", str(SCRIPT)], env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"token {token}"}
        ) as http:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    if http.get("/api/status").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.3)
            settings = http.get("/lab/api/settings/@jupyterlab/apputils-extension:notification").json()
            assert settings["settings"]["fetchNews"] == "false"
            started = http.post("/api/kernels", json={"name": "python3"})
            assert started.status_code == 201, started.text
            kernel = started.json()
            for _ in range(100):  # wait until it runs
                if http.get(f"/api/kernels/{kernel['id']}").json()["execution_state"] in ("idle", "busy"):
                    break
                time.sleep(0.2)
            time.sleep(1)
            http.delete(f"/api/kernels/{kernel['id']}")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    text = log.read_text(errors="replace")
    assert f"open: http://127.0.0.1:{port}/lab/tree/quickstart.ipynb?token={token}" in text
    assert "Kernel started" in text and "without encryption" not in text, text[-3000:]
    assert "nb_agents: notebooks are saved with records" in text
