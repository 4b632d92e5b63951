"""A server's question outlives the process that was asked: a real second process pauses on
it and is killed (its stdio server with it), and a new process answers it from
``agent.pending()`` on the same SQLite file.

* a 2026-07-28 server (the demo notes server): the pause holds the server's state, so the
  answer is the retry of the call, from the new process, and the note is tagged once;
* a 2025-era server (npm server-everything): the call that asked is gone, so the answer
  fails clearly and nothing is sent; answered again with ``rerun=True``, the call runs again
  from its start and the answer goes to the same question asked again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_toolchain import server_command

HERE = Path(__file__).resolve().parent


def _run(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / "proc_elicit.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ask_then_kill(db: Path, server: list[str], call: list[Any]) -> str:
    """Pause a turn on the server's question in a second process, then kill that process."""
    proc = _run("ask", str(db), json.dumps(server), json.dumps(call))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the turn paused (or the process ended)
        if not line.startswith("paused "):
            proc.kill()
            raise AssertionError(f"the asking process did not pause: {line!r} {proc.communicate()[1]}")
        return line.split()[1]
    finally:
        proc.kill()  # SIGKILL: no cleanup runs; its stdio server sees its pipes close
        proc.communicate(timeout=60)


def answer(db: Path, server: list[str], given: dict[str, Any]) -> tuple[str, str]:
    """Answer the paused question from pending() in a new process: (outcome, the rest it said)."""
    proc = _run("answer", str(db), json.dumps(server), json.dumps(given))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    outcome, _, rest = out.strip().partition(" ")
    return outcome, rest


def test_a_2026_question_is_answered_from_pending_after_the_asking_process_was_killed(
    tmp_path: Path, notes_dir: Path
) -> None:
    db = tmp_path / "agents.db"
    notes = ["notes", sys.executable, "-m", "nb_agents.mcp.demo", "--dir", str(notes_dir)]
    ask_then_kill(db, notes, ["tag_note", "t1", {"name": "ideas.txt"}])
    assert not (notes_dir / "ideas.txt").read_text().startswith("[")  # nothing was tagged yet

    outcome, said = answer(db, notes, {"content": {"priority": "high", "tags": "kept", "pinned": True}})
    assert outcome == "stop", said
    assert json.loads(said) == {"result": "tagged ideas.txt: [high pinned] tags: kept"}
    assert (notes_dir / "ideas.txt").read_text() == "[high pinned] tags: kept\nan MCP server for notes\n"

    outcome, said = answer(db, notes, {"content": {"priority": "low", "tags": "again", "pinned": False}})
    assert (outcome, said) == ("nothing", "waiting")  # answered once: a second answer finds nothing
    assert (notes_dir / "ideas.txt").read_text().count("tags:") == 1


def test_a_2025_question_cannot_be_resumed_and_is_run_again_only_when_asked_to(
    tmp_path: Path, mcp_js: Path
) -> None:
    db = tmp_path / "agents.db"
    everything = ["everything", *server_command(mcp_js, "server-everything")]
    ask_then_kill(db, everything, ["trigger-elicitation-request", "q1", {}])

    given = {"content": {"name": "Ada Lovelace", "check": True}}
    outcome, said = answer(db, everything, given)
    assert outcome == "failed", said
    assert said.startswith("FAILED_PRECONDITION") and "cannot be resumed" in said and "rerun=True" in said

    outcome, said = answer(db, everything, {**given, "rerun": True})
    assert outcome == "stop", said
    output = json.loads(said)
    assert "User provided the requested information" in output and "- Name: Ada Lovelace" in output


@pytest.fixture
def notes_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "ideas.txt").write_text("an MCP server for notes\n")
    return folder
