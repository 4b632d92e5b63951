"""A deadline noticed by two processes at once: its default applies once (issue 15, item 2).

Two fresh processes on one store (a SQLite file; the suite's PostgreSQL) find the
same approval hold past its deadline, one by a sweep (``expire_due``), one by
listing (``pending``). The default is an approval: the transfer runs once, one
``expired`` record is audited, and both see the one turn it resumed.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import procs
import pytest
from proc_expiry import EXPIRES_IN, build
from procs import finish


def run(*args: str) -> subprocess.Popen[str]:
    return procs.run("proc_expiry.py", *args)


def where(kind: str, tmp_path: Path) -> str:
    return procs.shared_store(kind, tmp_path, "bank.db")


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_two_processes_notice_the_same_expired_hold_and_its_default_applies_once(
    kind: str, tmp_path: Path
) -> None:
    store, ledger, go = where(kind, tmp_path), tmp_path / "ledger.txt", tmp_path / "go"
    reason, session_id = finish(run("pause", store, str(ledger)))
    paused_at = (
        time.monotonic()
    )  # the hold was made before this: its deadline is before paused_at + EXPIRES_IN
    assert reason == "interrupted" and not ledger.exists()
    racers = [run("sweep", store, str(ledger), str(go)), run("pending", store, str(ledger), str(go))]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(max(0.0, paused_at + EXPIRES_IN + 0.3 - time.monotonic()))  # past the deadline
    go.touch()
    results = [finish(p) for p in racers]
    assert ledger.read_text().splitlines() == ["500"]  # the default ran the transfer once
    assert results[0] == results[1] and results[0][0] == "stop"  # both see the one resumed turn
    agent = build(store, str(ledger))
    records = asyncio.run(agent.audit(session_id))
    assert [(r.kind, r.name, r.answer["applied"]) for r in records] == [
        ("expired", "transfer", {"approve": True})
    ]
    close = getattr(agent.store, "close", None)
    if close is not None:
        close()
