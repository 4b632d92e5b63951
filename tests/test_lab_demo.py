"""`make demo` (scripts/lab_demo.sh): refuses a busy port before printing a URL; the news toast
is off, kernels start without the "TCP without encryption" warning, saved notebooks keep records,
and it serves working copies: playing with the demo leaves `git status` as it was."""

from __future__ import annotations

import json
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
NOTEBOOKS = ROOT / "notebooks"
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


def git_status() -> str | None:
    """``git status --porcelain`` of the checkout (None when this is not a git checkout)."""
    proc = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return proc.stdout if proc.returncode == 0 else None


def test_the_working_copies_keep_what_you_changed_and_take_what_the_repository_changed(
    tmp_path: Path,
) -> None:
    source, copies = tmp_path / "notebooks", tmp_path / "copies"
    source.mkdir()
    for name in ("a.ipynb", "b.ipynb", "c.ipynb"):
        (source / name).write_text(f"{name} v1", encoding="utf-8")
    (source / ".ipynb_checkpoints").mkdir()
    run = [sys.executable, str(ROOT / "scripts" / "demo_copies.py"), str(source), str(copies)]
    first = subprocess.run(run, capture_output=True, text=True, check=True)
    assert "3 copied, 0 kept" in first.stdout
    assert sorted(p.name for p in copies.iterdir()) == ["a.ipynb", "b.ipynb", "c.ipynb"]

    (copies / "a.ipynb").write_text("a.ipynb played with", encoding="utf-8")  # you, in the demo
    (source / "b.ipynb").write_text("b.ipynb v2", encoding="utf-8")  # a pull
    later = time.time() + 5
    os.utime(source / "b.ipynb", (later, later))
    (copies / "c.ipynb").unlink()  # deleted: copied again
    again = subprocess.run(run, capture_output=True, text=True, check=True)

    assert "2 copied, 1 kept" in again.stdout
    assert (copies / "a.ipynb").read_text(encoding="utf-8") == "a.ipynb played with"
    assert (copies / "b.ipynb").read_text(encoding="utf-8") == "b.ipynb v2"
    assert (copies / "c.ipynb").read_text(encoding="utf-8") == "c.ipynb v1"


def test_the_tracked_notebooks_name_the_kernel_as_jupyter_does() -> None:
    # JupyterLab writes the running kernel's display name into a notebook it opens: a stored
    # "Python 3" would become "Python 3 (ipykernel)", and every opened notebook modified
    from ipykernel.kernelspec import get_kernel_dict

    spec = get_kernel_dict()
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        kernelspec = json.loads(path.read_text(encoding="utf-8"))["metadata"]["kernelspec"]
        assert kernelspec == {
            "display_name": spec["display_name"],
            "language": "python",
            "name": "python3",
        }, path


def test_the_demo_serves_working_copies_starts_quietly_and_leaves_the_repository_clean(
    tmp_path: Path,
) -> None:
    before = git_status()
    tracked = {p.name: p.read_bytes() for p in NOTEBOOKS.glob("*.ipynb")}
    port, token = free_port(), "t" * 32
    copies = tmp_path / "copies"
    log = tmp_path / "demo.log"
    env = {**os.environ, "PORT": str(port), "BIN": BIN, "JUPYTER_TOKEN": token, "TMPDIR": str(tmp_path)}
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "runtime")
    env["DEMO_DIR"] = str(copies)  # not the default demo-notebooks/: a developer's copies stay untouched
    with log.open("wb") as sink:
        proc = subprocess.Popen(["bash", str(SCRIPT)], env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"token {token}"}, timeout=60
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
            # what JupyterLab does when it opens a notebook: a session starts its kernel ...
            started = http.post(
                "/api/sessions",
                json={"path": "quickstart.ipynb", "type": "notebook", "kernel": {"name": "python3"}},
            )
            assert started.status_code == 201, started.text
            session = started.json()
            for _ in range(100):  # wait until it runs
                kernel = http.get(f"/api/kernels/{session['kernel']['id']}").json()
                if kernel["execution_state"] in ("idle", "busy"):
                    break
                time.sleep(0.2)
            # ... then it writes the kernel's name into the notebook, and autosave (or you) saves it
            name = http.get("/api/kernelspecs").json()["kernelspecs"]["python3"]["spec"]["display_name"]
            model = http.get("/api/contents/quickstart.ipynb", params={"content": 1}).json()
            nb = model["content"]
            nb["metadata"]["kernelspec"]["display_name"] = name
            nb["cells"].append(
                {"cell_type": "markdown", "id": "played", "metadata": {}, "source": "played with"}
            )
            saved = http.put(
                "/api/contents/quickstart.ipynb", json={"type": "notebook", "format": "json", "content": nb}
            )
            assert saved.status_code == 200, saved.text
            time.sleep(1)
            http.delete(f"/api/sessions/{session['id']}")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    text = log.read_text(errors="replace")
    assert f"open: http://127.0.0.1:{port}/lab/tree/quickstart.ipynb?token={token}" in text
    assert f"working copies in {copies}/" in text
    assert "Kernel started" in text and "without encryption" not in text, text[-3000:]
    assert "nb_agents: notebooks are saved with records" in text
    assert "played with" in (copies / "quickstart.ipynb").read_text(encoding="utf-8")
    assert {p.name: p.read_bytes() for p in NOTEBOOKS.glob("*.ipynb")} == tracked
    if before is not None:
        assert git_status() == before  # nothing the demo did shows in git
        ignored = subprocess.run(
            ["git", "-C", str(ROOT), "check-ignore", "-q", "demo-notebooks/quickstart.ipynb"], check=False
        )
        assert ignored.returncode == 0, "the demo's default folder, demo-notebooks/, must be git-ignored"
