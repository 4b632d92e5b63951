"""Over streamable HTTP: a FastMCP server (nb_agents.mcp.demo) on 127.0.0.1 in its own
process, which refuses any request without its bearer token."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import text_response, tool_call_response
from mcp_helpers import last_tool_output

import nb_agents as nba
from nb_agents.mcp import ElicitationRequest, MCPServer, progress_of
from nb_agents.middleware import ToolApproval
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio

TOKEN = "test-token-7f3a"
START_TIMEOUT = 60.0  # seconds; a bound, never a timing assertion


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_url(notes_dir: Path) -> Iterator[str]:
    port = _free_port()
    cmd = [sys.executable, "-m", "nb_agents.mcp.demo", "--dir", str(notes_dir), "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--token", TOKEN], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"the demo server exited: {proc.stderr.read() if proc.stderr else ''}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("the demo server did not listen in time") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()


def _web(url: str, open_servers: list[MCPServer], token: str = TOKEN, **options: object) -> MCPServer:
    options.setdefault("trusted", True)
    server = MCPServer.http(url, headers={"Authorization": f"Bearer {token}"}, name="web", **options)  # type: ignore[arg-type]
    open_servers.append(server)
    return server


async def test_tools_are_listed_and_called_with_the_authorization_header(
    http_url: str, open_servers: list[MCPServer]
) -> None:
    server = _web(http_url, open_servers)
    names = sorted(t.name for t in await server.list_tools())
    assert names == ["delete_note", "index_notes", "list_notes", "read_note", "tag_note", "write_note"]
    model = ScriptedModel(
        [tool_call_response(("read_note", "r1", {"name": "groceries.txt"})), text_response("ok")]
    )
    agent = nba.define_agent("web-agent", model=model, tools=[server], use=[ToolApproval()])
    res = await agent.chat().send("what do I need?")
    assert res.finish_reason == "stop" and res.interrupts == []  # read_note is read-only
    assert last_tool_output(model) == {"result": "milk eggs bread\n"}


async def test_a_wrong_token_is_refused_by_the_server_and_the_turn_names_it(
    http_url: str, open_servers: list[MCPServer]
) -> None:
    server = _web(http_url, open_servers, token="wrong")
    agent = nba.define_agent("web-agent", model=ScriptedModel([text_response("never")]), tools=[server])
    out = await agent.run_text("hello")
    assert out.finish_reason == "failed"
    assert out.error is not None and out.error.status == "UNAVAILABLE"
    assert "MCP server 'web'" in out.error.message and "401" in out.error.message


async def test_elicitation_progress_and_logs_over_http(
    http_url: str, open_servers: list[MCPServer], notes_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = _web(http_url, open_servers, prefix=True, tool_approval={"tag_note": False})
    model = ScriptedModel(
        [
            tool_call_response(("web_tag_note", "t1", {"name": "ideas.txt"})),
            text_response("tagged"),
            tool_call_response(("web_index_notes", "i1", {"delay": 0})),
            text_response("indexed"),
        ]
    )
    agent = nba.define_agent("web-agent", model=model, tools=[server], use=[ToolApproval()])
    chat = agent.chat()
    res = await chat.send("tag my ideas")
    ask = ElicitationRequest.claim(res.interrupts[0])
    assert ask is not None
    assert (
        ask.server == "web" and ask.tool == "tag_note" and ask.message == "How should 'ideas.txt' be tagged?"
    )
    assert (ask.requested_schema or {})["properties"]["priority"]["enum"] == ["low", "normal", "high"]
    done = await chat.resume(restart=[ask.accept({"priority": "high", "tags": "mcp, demo", "pinned": True})])
    assert done.finish_reason == "stop"
    assert (notes_dir / "ideas.txt").read_text().startswith("[high pinned] tags: mcp, demo\n")

    caplog.set_level(logging.INFO, logger="nb_agents.mcp.web")
    turn = chat.send_stream("index them")
    reports = [r for r in [progress_of(c) async for c in turn] if r is not None]
    assert (await turn.response).finish_reason == "stop"
    assert [(r.progress, r.total, r.message) for r in reports] == [
        (1, 2, "indexed groceries.txt"),
        (2, 2, "indexed ideas.txt"),
    ]
    logged = [r.getMessage() for r in caplog.records if r.name == "nb_agents.mcp.web"]
    assert "indexed groceries.txt" in logged and "indexed ideas.txt" in logged
    assert last_tool_output(model) == {"result": "2 notes, 13 words"}
