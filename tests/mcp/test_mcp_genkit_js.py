"""Genkit's real JS client (npm ``genkit``, as tests/interop installs it) streams a turn whose
MCP tool reports progress: the progress chunks reach it, and it reads the turn as it would
without them (the same text, finish reason and messages)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import text_response, tool_call_response
from interop import toolchain
from interop.conftest import run_json
from server.live import LiveServer

import nb_agents as nba
from nb_agents.mcp import MCPServer
from nb_agents.server import create_app
from nb_agents.testing import ScriptedModel

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def genkit_js() -> Path:
    try:
        return toolchain.ensure_js_client()
    except toolchain.Unavailable as exc:
        if toolchain.in_ci():
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc))


def test_genkit_js_reads_a_turn_with_progress_chunks_as_usual(
    genkit_js: Path, notes_server: MCPServer
) -> None:
    model = ScriptedModel(
        [
            tool_call_response(("index_notes", "i1", {"delay": 0})),  # reports progress
            text_response("Indexed."),
            tool_call_response(("list_notes", "l1", {})),  # does not
            text_response("Indexed."),
        ]
    )
    agent = nba.define_agent("notes", model=model, tools=[notes_server], store=nba.InMemorySessionStore())
    server = LiveServer(create_app([agent]))
    server.start()
    try:
        shutil.copyfile(HERE / "js" / "progress_flow.mjs", genkit_js / "progress_flow.mjs")
        script = ["node", genkit_js / "progress_flow.mjs", f"{server.url}/notes"]
        got = run_json([*script, "Index my notes"], cwd=genkit_js)
        plain = run_json([*script, "List my notes"], cwd=genkit_js)
    finally:
        server.stop()
    progress = [c for c in got["chunks"] if c["custom"]]
    assert [c["custom"]["mcpProgress"]["progress"] for c in progress] == [1, 2]
    assert all(c["role"] == "tool" and c["text"] == "" and c["interrupts"] == 0 for c in progress)
    assert got["text"] == "Indexed." and got["finishReason"] == "stop"
    # what the client makes of the turn is what it makes of one without progress
    assert [c for c in got["chunks"] if not c["custom"]] == plain["chunks"]
    assert (got["text"], got["finishReason"], got["roles"]) == (
        plain["text"],
        plain["finishReason"],
        plain["roles"],
    )
