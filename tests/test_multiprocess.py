"""Exactly-once across processes on one SQLite file, and resuming a turn
after the process that paused it has exited."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import procs
from procs import finish


def run(*args: str) -> subprocess.Popen[str]:
    return procs.run("proc_bank.py", *args)


def test_two_processes_resume_the_same_interrupt_and_the_transfer_runs_once(tmp_path: Path) -> None:
    db, ledger, go = str(tmp_path / "bank.db"), tmp_path / "ledger.txt", tmp_path / "go"
    reason, paused_snapshot = finish(run("pause", db, str(ledger)))
    assert reason == "interrupted"
    # the pausing process has exited: two fresh processes answer at once
    procs = [run("resume", db, str(ledger), str(go)) for _ in range(2)]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    results = [finish(p) for p in procs]
    assert ledger.read_text().splitlines() == ["500"]
    assert [r[0] for r in results] == ["stop", "stop"]
    assert results[0][1] == results[1][1] != paused_snapshot  # both see the one resumed turn


def test_resume_after_the_pausing_process_exited(tmp_path: Path) -> None:
    db, ledger, go = str(tmp_path / "bank.db"), tmp_path / "ledger.txt", tmp_path / "go"
    assert finish(run("pause", db, str(ledger)))[0] == "interrupted"
    go.touch()
    assert finish(run("resume", db, str(ledger), str(go)))[0] == "stop"
    assert ledger.read_text().splitlines() == ["500"]
