"""Against npm's @modelcontextprotocol/server-filesystem over stdio (tools prefixed ``fs_``):
reads run without a form; a write is held for approval and runs exactly once on Approve."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import text_response, tool_call_response
from mcp_helpers import html_of, last_tool_output

import nb_agents as nba
from nb_agents.chat import Chat
from nb_agents.mcp import MCPServer
from nb_agents.middleware import ToolApproval
from nb_agents.notebook import TurnView
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def _agent(server: MCPServer, model: ScriptedModel, tmp_path: Path) -> nba.Agent:
    store = nba.SqliteSessionStore(str(tmp_path / "agents.db"))
    return nba.define_agent("files", model=model, tools=[server], use=[ToolApproval()], store=store)


async def test_the_tools_carry_the_prefix_and_the_servers_annotations(filesystem: MCPServer) -> None:
    tools = {t.name: t for t in await filesystem.list_tools()}
    assert {"fs_read_text_file", "fs_write_file", "fs_list_directory"} <= set(tools)
    assert tools["fs_write_file"].remote_name == "write_file"
    assert tools["fs_write_file"].annotations["destructiveHint"] is True
    assert tools["fs_write_file"].needs_approval is True
    assert tools["fs_read_text_file"].needs_approval is False


async def test_a_read_runs_without_a_form(filesystem: MCPServer, fs_root: Path, tmp_path: Path) -> None:
    call = ("fs_read_text_file", "r1", {"path": str(fs_root / "hello.txt")})
    model = ScriptedModel([tool_call_response(call), text_response("read it")])
    res = await _agent(filesystem, model, tmp_path).chat().send("read hello.txt")
    assert res.finish_reason == "stop" and res.interrupts == []
    assert last_tool_output(model) == {"content": "hello from the filesystem server\n"}  # structuredContent


async def test_a_write_is_held_for_approval_and_runs_exactly_once(
    filesystem: MCPServer, fs_root: Path, tmp_path: Path
) -> None:
    target = fs_root / "new.txt"
    call = ("fs_write_file", "w1", {"path": str(target), "content": "written once"})
    model = ScriptedModel([tool_call_response(call), text_response("saved")])
    agent = _agent(filesystem, model, tmp_path)
    chat = agent.chat()
    res = await chat.send("write new.txt")
    assert res.finish_reason == "interrupted"
    hold = res.interrupts[0]
    assert hold.data == {
        "message": "Tool not in approved list: fs_write_file",
        "mcp": {
            "server": "fs",
            "tool": "write_file",
            "annotations": {
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            "trusted": True,
        },
    }
    assert not target.exists()  # held: nothing was written
    view = TurnView(res, chat)
    form = view.forms[0]
    assert form.mode == "hold"
    shown = html_of(form)
    assert (
        "MCP server <b>fs</b>" in shown
        and "<code>write_file</code>" in shown
        and "destructive: true" in shown
    )
    form.approve_button.click()
    form.approve_button.click()  # a double click records one answer
    await view.task
    assert view.result is not None and view.result.finish_reason == "stop"
    assert target.read_text() == "written once"
    assert sorted(p.name for p in fs_root.iterdir()) == ["hello.txt", "new.txt"]
    assert "Successfully wrote" in str(last_tool_output(model))
    # the same answer sent again (a retry, a second tab) replays the first result: no second write
    target.unlink()
    again = await Chat(agent, snapshot_id=res.snapshot_id).resume(restart=[hold.approve()])
    assert again.snapshot_id == view.result.snapshot_id
    assert not target.exists()
    assert len(list(await agent.audit(res.session_id))) == 1  # one answer, recorded once


async def test_a_denied_write_never_reaches_the_server(
    filesystem: MCPServer, fs_root: Path, tmp_path: Path
) -> None:
    target = fs_root / "denied.txt"
    call = ("fs_write_file", "w1", {"path": str(target), "content": "no"})
    model = ScriptedModel([tool_call_response(call), text_response("ok, not written")])
    chat = _agent(filesystem, model, tmp_path).chat()
    res = await chat.send("write")
    view = TurnView(res, chat)
    view.forms[0].deny_button.click()
    await view.task
    assert view.result is not None and view.result.finish_reason == "stop"
    assert not target.exists()
    assert "denied" in last_tool_output(model)["error"]
