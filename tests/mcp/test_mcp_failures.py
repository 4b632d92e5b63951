"""When a server goes wrong: it dies in the middle of a call, sends a malformed schema, will
not start, or restarted while a question waited for its answer. Each gives a clear error
naming the server (or, for the question, goes on), and the session loses nothing."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from helpers import text_response, tool_call_response
from mcp_helpers import last_tool_output
from mcp_servers import script_server

import nb_agents as nba
from nb_agents.mcp import ElicitationRequest, MCPConnectionError, MCPServer
from nb_agents.middleware import ToolApproval
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def _agent(server: MCPServer, model: ScriptedModel, store: nba.SessionStore | None = None) -> nba.Agent:
    return nba.define_agent(
        "fragile",
        model=model,
        tools=[server],
        use=[ToolApproval(allowed_tools=["crash"])],
        store=store or nba.InMemorySessionStore(),
    )


async def test_a_server_that_dies_mid_call_fails_the_turn_and_reconnects_on_the_next(
    tmp_path: Path, open_servers: list[MCPServer]
) -> None:
    server = script_server("broken", str(tmp_path / "state"))
    open_servers.append(server)
    model = ScriptedModel(
        [
            tool_call_response(("echo", "e1", {"text": "one"})),
            text_response("said one"),
            tool_call_response(("crash", "c1", {})),
            tool_call_response(("echo", "e2", {"text": "two"})),
            text_response("said two"),
        ]
    )
    chat = _agent(server, model).chat()
    await chat.send("say one")
    before = [m.to_wire() for m in chat.messages]
    turn = chat.send_stream("crash")
    progress = [c async for c in turn if c.model_chunk is not None and c.model_chunk.custom]
    with pytest.raises(nba.AgentError) as failed:
        await turn.response
    message = str(failed.value)
    assert "MCP server 'broken'" in message
    assert "exiting in the middle of a call" in message  # its last words on stderr
    assert len(progress) == 1  # what it reported before it died was streamed
    assert [m.to_wire() for m in chat.messages] == before  # nothing of the session is lost
    res = await chat.send("say two")  # the next turn starts the server again
    assert res.finish_reason == "stop"
    assert last_tool_output(model) == "echo: two"
    assert [m.to_wire() for m in chat.messages[: len(before)]] == before


async def test_a_malformed_schema_is_a_clear_error_and_the_session_goes_on_once_fixed(
    tmp_path: Path, open_servers: list[MCPServer]
) -> None:
    state = tmp_path / "state"
    server = script_server("broken", str(state))
    open_servers.append(server)
    model = ScriptedModel(
        [
            tool_call_response(("echo", "e1", {"text": "one"})),
            text_response("said one"),
            tool_call_response(("crash", "c1", {})),
            tool_call_response(("echo", "e2", {"text": "two"})),
            text_response("said two"),
        ]
    )
    chat = _agent(server, model).chat()
    await chat.send("say one")
    before = [m.to_wire() for m in chat.messages]
    state.write_text("malformed")  # what the server lists once it restarts
    with pytest.raises(nba.AgentError):
        await chat.send("crash")  # dies; the next connection lists the broken tool
    with pytest.raises(nba.AgentError) as bad:
        await chat.send("say two")
    message = str(bad.value)
    assert "MCP server 'broken' lists tool 'bad' with a malformed input schema" in message
    assert "exclude=['bad']" in message
    assert bad.value.status == "FAILED_PRECONDITION"
    assert [m.to_wire() for m in chat.messages] == before
    state.write_text("ok")  # the server is fixed: the same chat goes on
    res = await chat.send("say two")
    assert res.finish_reason == "stop" and last_tool_output(model) == "echo: two"
    assert [m.to_wire() for m in chat.messages[: len(before)]] == before


async def test_excluding_the_broken_tool_keeps_the_rest(
    tmp_path: Path, open_servers: list[MCPServer]
) -> None:
    state = tmp_path / "state"
    state.write_text("malformed")
    server = script_server("broken", str(state), exclude=["bad"])
    open_servers.append(server)
    assert sorted(t.name for t in await server.list_tools()) == ["crash", "echo"]


async def test_a_server_that_will_not_start_names_itself(open_servers: list[MCPServer]) -> None:
    server = MCPServer.stdio(
        [sys.executable, "-c", "import sys; sys.exit('no such server here')"], name="ghost"
    )
    open_servers.append(server)
    agent = _agent(server, ScriptedModel([text_response("never")]))
    out = await agent.run_text("hello")
    assert out.finish_reason == "failed"
    assert out.error is not None and out.error.status == "UNAVAILABLE"
    assert "MCP server 'ghost'" in out.error.message and "no such server here" in out.error.message
    with pytest.raises(MCPConnectionError):
        await server.list_tools()


@pytest.mark.parametrize("keep_key", [True, False])
async def test_an_answer_after_the_server_restarted_goes_on_from_the_stored_question(
    notes_dir: Path, tmp_path: Path, open_servers: list[MCPServer], keep_key: bool
) -> None:
    # the demo speaks 2026-07-28: its question came back as the call's result, and the pause
    # keeps the state; the server that asked (and this agent) are gone when the answer comes
    def notes() -> MCPServer:
        server = MCPServer.stdio(
            [sys.executable, "-m", "nb_agents.mcp.demo", "--dir", str(notes_dir)],
            name="notes",
            trusted=True,
            tool_approval={"tag_note": False},
        )
        open_servers.append(server)
        return server

    call = ("tag_note", "t1", {"name": "ideas.txt"})
    db = str(tmp_path / "agents.db")
    first = _agent(notes(), ScriptedModel([tool_call_response(call)]), nba.SqliteSessionStore(db))
    res = await first.chat().send("tag my ideas")
    ask = ElicitationRequest.claim(res.interrupts[0])
    assert ask is not None and ask.resumable and res.interrupts[0].data["mcp"]["tool"] == "tag_note"
    assert res.interrupts[0].data["mcp"]["inputRequired"]["requestState"]
    await first.aclose()  # as if the kernel restarted: the server process stops with it
    if not keep_key:  # the server starts again with a new key: it cannot read the state it sealed
        (notes_dir / ".request-state-key").unlink()

    model = ScriptedModel([text_response("tagged")])
    agent = _agent(notes(), model, nba.SqliteSessionStore(db))
    answer = ask.accept({"priority": "high", "tags": "mcp", "pinned": False})
    out = await agent.run(
        nba.AgentInput(resume=nba.ToolResume(restart=[answer])), snapshot_id=res.snapshot_id
    )
    # with its key, the server reads its state; without, the call runs again from its start and
    # the answer goes to the same question, asked again: either way the person is not asked twice
    assert out.finish_reason == "stop"
    assert last_tool_output(model) == {"result": "tagged ideas.txt: [high] tags: mcp"}
    assert (notes_dir / "ideas.txt").read_text() == "[high] tags: mcp\nan MCP server for notes\n"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_connects_to_the_server_on_its_own(notes_server: MCPServer) -> None:
    """A worker forked by ``multiprocessing`` has a copy of the parent's session, whose owner
    task and server pipes are the parent's: the child's calls go through a connection (and a
    server process) of its own, and the parent's session goes on untouched."""

    def list_notes() -> object:
        model = ScriptedModel([tool_call_response(("list_notes", "l1", {})), text_response("two notes")])
        agent = nba.define_agent("notes", model=model, tools=[notes_server])
        assert agent.chat().send_sync("what notes do I have?").finish_reason == "stop"
        return last_tool_output(model)

    listed = {"result": ["groceries.txt", "ideas.txt"]}
    assert list_notes() == listed  # the parent's session is open
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            signal.alarm(20)  # a hang is a failure, not a stuck suite
            code = 0 if list_notes() == listed else 2
            notes_server.aclose_sync()  # its own server process, not the parent's
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # -SIGALRM: it waited on the parent's session
    assert list_notes() == listed  # the parent's session, unharmed
