"""A per-session rule revoked in one process while another process's turn of the session runs.

The running turn loaded the session, rule included, before the revoke; its row,
written after, must not bring the rule back (issue 15, item 1). Real processes on
one SQLite file and on the suite's PostgreSQL (tests/proc_rules.py).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import procs
import pytest
from proc_rules import build
from procs import finish


def run(*args: str) -> subprocess.Popen[str]:
    return procs.run("proc_rules.py", *args)


def where(kind: str, tmp_path: Path) -> str:
    return procs.shared_store(kind, tmp_path, "tables.db")


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_rule_revoked_here_while_another_process_runs_a_turn_stays_revoked(
    kind: str, tmp_path: Path
) -> None:
    store, mark = where(kind, tmp_path), tmp_path / "in-the-tool"
    session_id, rule_id = finish(run("always", store))
    turn = run("slow", store, session_id, str(mark))
    deadline = time.monotonic() + 60
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert mark.exists(), "the other process's turn never reached its tool"

    agent = build(store)
    revoked = agent.revoke_rule_sync(session_id, rule_id)  # the other turn has the rule loaded
    mark.unlink()  # let it finish and write its row
    assert finish(turn) == ["tool", "said:", "slow", "rows", "of", "big"]

    assert revoked.id == rule_id and list(agent.rules_sync(session_id)) == []
    assert finish(run("rules", store, session_id)) == ["none"]  # as another process reads it too
    held = agent.chat(session_id=session_id).send_sync("readTable sales")
    assert held.finish_reason == "interrupted"
