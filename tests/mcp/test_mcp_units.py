"""The pieces of nb_agents.mcp without a server (approval, tables, chunks, answers, forms),
the small core hooks it needs, and the sync twins on a live server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import text_response, tool_call_response
from mcp_helpers import control, html_of, last_tool_output

import nb_agents as nba
from nb_agents.interrupts import AgentInterrupt
from nb_agents.mcp import ElicitationRequest, MCPServer, Progress, describe_hints, needs_approval, progress_of
from nb_agents.mcp.progress import progress_chunk, progress_html
from nb_agents.middleware import ToolApproval
from nb_agents.notebook.elicitation import ElicitationForm, is_elicitation, normalized
from nb_agents.render import interrupt_html
from nb_agents.testing import ScriptedModel
from nb_agents.tools import ToolContext
from nb_agents.toolsets import ToolTable, is_toolset

pytestmark = pytest.mark.anyio


# -- approval from annotations -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("hints", "held"),
    [
        ({"readOnlyHint": True}, False),
        ({"readOnlyHint": True, "openWorldHint": False, "destructiveHint": False}, False),
        ({"readOnlyHint": True, "openWorldHint": True}, True),
        ({"readOnlyHint": True, "destructiveHint": True}, True),
        ({"readOnlyHint": False}, True),
        ({"destructiveHint": True}, True),
        ({"destructiveHint": False}, None),  # not destructive: the agent's ToolApproval decides
        ({"openWorldHint": True}, True),
        ({}, True),  # MCP's default for destructiveHint is true
        (None, True),
    ],
)
def test_of_a_trusted_server_only_a_read_only_tool_runs_without_approval(
    hints: dict[str, Any] | None, held: bool | None
) -> None:
    assert needs_approval(hints, "t", trusted=True) is held


@pytest.mark.parametrize(
    "hints", [{"readOnlyHint": True}, {"readOnlyHint": True, "destructiveHint": False}, {}, None]
)
def test_every_tool_of_an_untrusted_server_needs_a_person(hints: dict[str, Any] | None) -> None:
    assert needs_approval(hints, "t") is True


def test_approval_is_overridable_per_server_and_per_tool() -> None:
    ro, rw = {"readOnlyHint": True}, {"destructiveHint": True}
    assert needs_approval(ro, "a", approval=True, trusted=True) is True
    assert needs_approval(rw, "a", approval=False) is False
    assert needs_approval(rw, "a", approval=True, tool_approval={"a": False}) is False
    assert needs_approval(ro, "a", tool_approval={"b": True}, trusted=True) is False
    assert needs_approval(ro, "a", tool_approval={"b": True}) is True
    assert (
        describe_hints({"readOnlyHint": False, "destructiveHint": True}) == "may change things, destructive"
    )
    assert describe_hints(None) == "no hints"


# -- the core hooks: ToolApproval, ToolContext.tool ----------------------------------------------
def _hold_agent(tool: nba.Tool, model: ScriptedModel) -> nba.Agent:
    return nba.define_agent("gate", model=model, tools=[tool], use=[ToolApproval()])


async def test_toolapproval_lets_a_tool_that_needs_no_approval_through_and_sees_it_in_ctx() -> None:
    seen: list[Any] = []

    @nba.tool
    async def peek(ctx: ToolContext) -> str:
        seen.append(ctx.tool)
        return "ok"

    peek.needs_approval = False
    model = ScriptedModel([tool_call_response(("peek", "p", {})), text_response("done")])
    out = await _hold_agent(peek, model).run_text("go")
    assert out.finish_reason == "stop"
    assert seen == [peek]


async def test_a_hold_carries_the_tools_approval_info() -> None:
    @nba.tool
    async def write() -> str:
        return "written"

    write.approval_info = {"mcp": {"server": "fs", "tool": "write", "annotations": {"destructiveHint": True}}}
    model = ScriptedModel([tool_call_response(("write", "w", {})), text_response("done")])
    out = await _hold_agent(write, model).run_text("go")
    assert out.finish_reason == "interrupted"
    part = out.message.interrupts()[0] if out.message else None
    assert part is not None
    assert (part.metadata or {})["interrupt"] == {
        "message": "Tool not in approved list: write",
        "mcp": {"server": "fs", "tool": "write", "annotations": {"destructiveHint": True}},
    }
    assert nba.middleware.ToolApproval.interrupted(part) is not None  # still a hold
    shown = interrupt_html(part)
    assert "MCP server <b>fs</b> · tool <code>write</code> · destructive: true" in shown


async def test_a_tool_can_stream_chunks_from_its_context() -> None:
    @nba.tool
    async def busy(ctx: ToolContext) -> str:
        await ctx.send_chunk(progress_chunk(Progress("s", "busy", ctx.ref, 1, 2)))
        return "done"

    model = ScriptedModel([tool_call_response(("busy", "b", {})), text_response("ok")])
    turn = nba.define_agent("busy", model=model, tools=[busy]).chat().send_stream("go")
    reports = [r for r in [progress_of(c) async for c in turn] if r is not None]
    assert reports == [Progress("s", "busy", "b", 1.0, 2.0)]
    await ToolContext(name="x").send_chunk({"ignored": True})  # nobody listens: dropped


# -- the tool table --------------------------------------------------------------------------------
class FakeToolset:
    def __init__(self, name: str, tools: list[nba.Tool] | None) -> None:
        self.name = name
        self.tools = tools

    async def list_tools(self) -> list[nba.Tool]:
        assert self.tools is not None
        return self.tools

    def cached_tools(self) -> list[nba.Tool] | None:
        return self.tools

    async def aclose(self) -> None:
        return None


@nba.tool
async def fixed_tool() -> str:
    return "fixed"


def test_the_tool_table_merges_fixed_tools_and_listings() -> None:
    ts = FakeToolset("srv", None)
    assert is_toolset(ts) and not is_toolset(fixed_tool)
    table = ToolTable({"fixed_tool": fixed_tool}, [ts])
    assert list(table) == ["fixed_tool"]
    standin = table.get("later")  # not listed yet: a stand-in that takes any input
    assert standin is not None and standin.parse_input({"x": 1}) is not None
    assert "later" not in table

    @nba.tool
    async def later() -> str:
        return "later"

    assert table.rebuild([[later]]) is True
    ts.tools = [later]
    assert table["later"] is later and table.get("nope") is None
    assert table.rebuild([[later]]) is False
    with pytest.raises(nba.InvalidArgumentError, match="clashes with the agent's own tools"):
        table.rebuild([[fixed_tool]])


# -- progress chunks ---------------------------------------------------------------------------------
def test_a_progress_chunk_round_trips_and_carries_nothing_a_client_must_read() -> None:
    chunk = progress_chunk(Progress("srv", "tool", "r1", 2, 5, "working <hard>"))
    wire = chunk.to_wire()
    assert wire == {
        "modelChunk": {
            "role": "tool",
            "content": [],
            "custom": {
                "mcpProgress": {
                    "server": "srv",
                    "tool": "tool",
                    "progress": 2,
                    "ref": "r1",
                    "total": 5,
                    "message": "working <hard>",
                }
            },
        }
    }
    back = nba.AgentStreamChunk.model_validate(wire)
    assert progress_of(back) == Progress("srv", "tool", "r1", 2.0, 5.0, "working <hard>")
    assert (
        back.model_chunk is not None and back.model_chunk.text == "" and back.model_chunk.interrupts() == []
    )
    bar = progress_html(Progress("srv", "tool", "r1", 2, 5, "working <hard>"))
    assert '<progress value="0.400" max="1"' in bar and "2 / 5" in bar and "working &lt;hard&gt;" in bar
    assert progress_of(nba.AgentStreamChunk()) is None


# -- elicitation answers and forms ---------------------------------------------------------------------
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Who you are"},
        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
        "hero": {
            "type": "string",
            "title": "Hero",
            "oneOf": [{"const": "h1", "title": "Superman"}, {"const": "h2", "title": "Batman"}],
        },
        "subscribe": {"type": "boolean", "title": "Subscribe"},
    },
    "required": ["name", "age"],
}


def _asked(schema: dict[str, Any] = SCHEMA) -> AgentInterrupt:
    data = {
        "message": "Tell me about you",
        "mcp": {"server": "srv", "tool": "ask", "elicitation": {"mode": "form", "requestedSchema": schema}},
    }
    part = nba.Part(
        tool_request=nba.ToolRequest(name="ask", ref="a1", input={}), metadata={"interrupt": data}
    )
    return AgentInterrupt(part)


def test_an_elicitation_request_builds_restarts_with_the_mcp_answer() -> None:
    ask = ElicitationRequest.claim(_asked())
    assert ask is not None and ask.server == "srv" and ask.tool == "ask" and ask.mode == "form"
    part = ask.accept({"name": "Ada", "age": 36})
    assert part.tool_request is not None and part.tool_request.ref == "a1"
    assert (part.metadata or {})["resumed"] == {"action": "accept", "content": {"name": "Ada", "age": 36}}
    assert (ask.decline().metadata or {})["resumed"] == {"action": "decline"}
    assert not ask.resumable  # a 2025-era question: answered only while its call is open
    again = ask.accept({"name": "Ada", "age": 36}, rerun=True)
    assert (again.metadata or {})["resumed"]["rerun"] is True
    assert (ask.cancel().metadata or {})["resumed"] == {"action": "cancel"}
    assert ask.check({"name": "Ada", "age": 200}) == ["age: 200 is greater than the maximum of 150"]
    with pytest.raises(ValueError, match="not an elicitation answer"):
        ask.answer("maybe")  # type: ignore[arg-type]
    hold = nba.Part(tool_request=nba.ToolRequest(name="x"), metadata={"interrupt": {"message": "hi"}})
    assert ElicitationRequest.claim(hold) is None


def test_the_form_shows_the_question_and_accepts_only_what_fits() -> None:
    interrupt = _asked()
    assert is_elicitation(interrupt)
    answered: list[Any] = []
    form = ElicitationForm(interrupt, on_answer=answered.append)
    shown = html_of(form)
    assert "srv</b> asks, while running <code>ask</code>" in shown and "Tell me about you" in shown
    assert "Who you are" in shown
    assert control(form, "Hero").options == (("—", None), ("Superman", "h1"), ("Batman", "h2"))
    control(form, "Name *").value = "Ada"
    control(form, "Age").value = 200
    form.accept_button.click()
    assert form.answer is None and "greater than the maximum of 150" in form.error.value
    control(form, "Age").value = 36
    control(form, "Hero").value = "h2"
    form.accept_button.click()
    assert form.answer is not None and answered == [form]
    resumed = (form.answer.part.metadata or {})["resumed"]
    assert resumed == {
        "action": "accept",
        "content": {"name": "Ada", "age": 36, "hero": "h2", "subscribe": False},
    }
    form.reset()
    form.decline_button.click()
    assert form.answer is not None and (form.answer.part.metadata or {})["resumed"] == {"action": "decline"}


def test_titled_enums_become_dropdowns() -> None:
    assert normalized({"type": "array", "items": {"anyOf": [{"const": "f1", "title": "Tuna"}]}}) == {
        "type": "array",
        "items": {"type": "string", "enum": ["f1"]},
    }


# -- a live server from sync code, and answers checked before anything runs ----------------------------
def test_the_sync_twins_drive_a_server(notes_server: MCPServer) -> None:
    model = ScriptedModel([tool_call_response(("list_notes", "l1", {})), text_response("two notes")])
    agent = nba.define_agent("notes", model=model, tools=[notes_server], use=[ToolApproval()])
    res = agent.chat().send_sync("what notes do I have?")
    assert res.finish_reason == "stop"
    assert last_tool_output(model) == {"result": ["groceries.txt", "ideas.txt"]}
    assert [t.name for t in notes_server.list_tools_sync()][:2] == ["list_notes", "read_note"]
    agent.aclose_sync()
    assert "not connected" in repr(notes_server)


async def test_a_malformed_answer_is_rejected_before_anything_runs(
    notes_dir: Path, open_servers: list[MCPServer]
) -> None:
    server = MCPServer.stdio(
        [sys.executable, "-m", "nb_agents.mcp.demo", "--dir", str(notes_dir)],
        name="notes",
        trusted=True,
        tool_approval={"tag_note": False},
    )
    open_servers.append(server)
    model = ScriptedModel(
        [tool_call_response(("tag_note", "t1", {"name": "ideas.txt"})), text_response("ok")]
    )
    agent = nba.define_agent("notes", model=model, tools=[server], store=nba.InMemorySessionStore())
    chat = agent.chat()
    res = await chat.send("tag")
    bad = res.interrupts[0].restart(resumed={"action": "maybe"})
    with pytest.raises(nba.AgentError, match="resumed value that fails the tool's resume schema"):
        await chat.resume(restart=[bad])
    ask = ElicitationRequest.claim(res.interrupts[0])
    assert ask is not None
    wrong = ask.accept({"priority": "high", "tags": 3, "pinned": False})
    with pytest.raises(nba.AgentError, match="does not fit its schema: tags: 3 is not of type 'string'"):
        await chat.resume(restart=[wrong])
    from nb_agents.chat import Chat

    # the question is still open: answered again from the failed snapshot, the same call goes on
    retry = Chat(agent, session_id=res.session_id)
    done = await retry.resume(restart=[ask.accept({"priority": "low", "tags": "x", "pinned": False})])
    assert done.finish_reason == "stop"
    assert (notes_dir / "ideas.txt").read_text().startswith("[low] tags: x")


def test_importing_nb_agents_imports_no_mcp_and_nb_agents_mcp_no_sdk() -> None:
    code = (
        "import sys, nb_agents, nb_agents.mcp; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


async def test_progress_chunks_cross_the_http_server_to_a_remote_chat(notes_server: MCPServer) -> None:
    import httpx

    from nb_agents.server import create_app

    model = ScriptedModel([tool_call_response(("index_notes", "i1", {"delay": 0})), text_response("indexed")])
    served = nba.define_agent("notes", model=model, tools=[notes_server], store=nba.InMemorySessionStore())
    app = create_app([served])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://notes.test"
    ) as client:
        remote = nba.remote_agent("http://notes.test/notes", client=client)
        turn = remote.chat().send_stream("index my notes")
        reports = [r for r in [progress_of(c) async for c in turn] if r is not None]
        res = await turn.response
    assert res.text == "indexed"
    assert [(r.tool, r.progress, r.total) for r in reports] == [("index_notes", 1, 2), ("index_notes", 2, 2)]
