"""Against npm's @modelcontextprotocol/server-everything over stdio: listing, a read-only
call without a form, an elicitation answered through its form, progress as chunks."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from helpers import text_response, tool_call_response
from mcp_helpers import control, html_of, last_tool_output
from mcp_toolchain import server_command

import nb_agents as nba
from nb_agents.mcp import ElicitationRequest, MCPServer, MCPTool, progress_of
from nb_agents.middleware import ToolApproval
from nb_agents.notebook import TurnView
from nb_agents.notebook.elicitation import ElicitationForm
from nb_agents.notebook.progress import progress_bars
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def _agent(server: MCPServer, model: ScriptedModel) -> nba.Agent:
    return nba.define_agent(
        "everything-agent",
        model=model,
        tools=[server],
        use=[ToolApproval()],
        store=nba.InMemorySessionStore(),
    )


async def test_the_servers_tools_are_listed_with_its_schemas_and_annotations(everything: MCPServer) -> None:
    tools = {t.name: t for t in await everything.list_tools()}
    assert {"echo", "get-sum", "trigger-long-running-operation", "trigger-elicitation-request"} <= set(tools)
    assert all(isinstance(t, MCPTool) for t in tools.values())
    get_sum = tools["get-sum"]
    assert get_sum.input_schema["required"] == ["a", "b"]
    assert get_sum.input_schema["properties"]["a"]["type"] == "number"
    assert get_sum.annotations == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert get_sum.needs_approval is False
    # not read-only, but marked not destructive: the agent's ToolApproval decides
    assert tools["trigger-elicitation-request"].annotations.get("destructiveHint") is False
    assert tools["trigger-elicitation-request"].needs_approval is None
    # open world but not destructive: the agent's ToolApproval decides too
    assert tools["gzip-file-as-resource"].needs_approval is None
    assert everything.cached_tools() is not None


async def test_the_model_is_sent_the_servers_definitions_on_the_first_turn(everything: MCPServer) -> None:
    model = ScriptedModel([text_response("hello")])
    agent = _agent(everything, model)
    assert agent.tools == {}  # nothing is started before a turn needs it
    await agent.chat().send("hi")
    sent = {d.name: d for d in model.requests[0].tools}
    assert sent["echo"].input_schema is not None
    assert sent["echo"].input_schema["properties"]["message"]["type"] == "string"
    assert "$schema" not in sent["echo"].input_schema
    assert "echo" in agent.tools


async def test_a_read_only_tool_runs_without_a_form(everything: MCPServer) -> None:
    model = ScriptedModel([tool_call_response(("get-sum", "s1", {"a": 2, "b": 3})), text_response("5")])
    res = await _agent(everything, model).chat().send("add 2 and 3")
    assert res.finish_reason == "stop"
    assert res.interrupts == []
    assert "5" in str(last_tool_output(model))


async def test_bad_input_reaches_the_model_as_a_tool_error_before_the_server(everything: MCPServer) -> None:
    model = ScriptedModel([tool_call_response(("get-sum", "s1", {"a": "two"})), text_response("sorry")])
    res = await _agent(everything, model).chat().send("add")
    assert res.finish_reason == "stop"
    error = last_tool_output(model)["error"]
    assert "Invalid input for tool 'get-sum'" in error and "'b' is a required property" in error


async def test_an_elicitation_is_answered_through_its_form_and_the_server_sees_the_value(
    everything: MCPServer,
) -> None:
    model = ScriptedModel(
        [tool_call_response(("trigger-elicitation-request", "q1", {})), text_response("ok")]
    )
    agent = _agent(everything, model)
    chat = agent.chat()
    res = await chat.send("ask me something")
    # the tool is not read-only: first ToolApproval holds it, with its server and annotations
    assert res.interrupts[0].data["mcp"]["server"] == "everything"
    assert res.interrupts[0].data["mcp"]["annotations"]["readOnlyHint"] is False
    view = TurnView(res, chat)
    assert "MCP server <b>everything</b>" in html_of(view)
    view.forms[0].approve_button.click()
    await view.task
    # approved, the call runs and the server asks: the turn pauses on the same tool call
    assert view.child is not None
    paused = view.child.response
    assert paused.finish_reason == "interrupted"
    assert paused.interrupts[0].ref == "q1"
    ask = ElicitationRequest.claim(paused.interrupts[0])
    assert ask is not None and "name" in (ask.requested_schema or {})["properties"]
    form = view.child.forms[0]
    assert isinstance(form, ElicitationForm)
    assert "everything</b> asks" in html_of(form)
    assert "Please provide inputs for the following fields:" in html_of(form)
    assert "Your full, legal name" in html_of(form)
    control(form, "String *").value = "Ada Lovelace"
    control(form, "Boolean").value = True
    assert control(form, "Titled Single Select Enum").options[1] == ("Superman", "hero-1")
    form.accept_button.click()
    await view.child.task
    done = view.child.result
    assert done is not None and done.finish_reason == "stop"
    said = last_tool_output(model)
    assert "User provided the requested information" in said
    assert "- Name: Ada Lovelace" in said and "- Agreed to terms: true" in said
    assert '"action": "accept"' in said


@pytest.mark.parametrize(("button", "word"), [("decline", "declined"), ("cancel", "cancelled")])
async def test_a_declined_or_cancelled_elicitation_goes_back_to_the_server(
    mcp_js: Path, open_servers: list[MCPServer], button: str, word: str
) -> None:
    # a per-tool override: this tool runs without approval, so the question is the first pause
    server = MCPServer.stdio(
        server_command(mcp_js, "server-everything"),
        name="everything",
        trusted=True,
        tool_approval={"trigger-elicitation-request": False},
    )
    open_servers.append(server)
    model = ScriptedModel(
        [tool_call_response(("trigger-elicitation-request", "q1", {})), text_response("ok")]
    )
    chat = _agent(server, model).chat()
    res = await chat.send("ask")
    view = TurnView(res, chat)
    form = view.forms[0]
    assert isinstance(form, ElicitationForm)
    getattr(form, f"{button}_button").click()
    await view.task
    assert view.result is not None and view.result.finish_reason == "stop"
    assert f"User {word}" in last_tool_output(model)


async def test_progress_notifications_stream_as_chunks_that_genkit_clients_can_ignore(
    everything: MCPServer,
) -> None:
    call = ("trigger-long-running-operation", "p1", {"duration": 0.4, "steps": 4})
    model = ScriptedModel([tool_call_response(call), text_response("done")])
    turn = _agent(everything, model).chat().send_stream("run it")
    chunks = [c async for c in turn]
    res = await turn.response
    assert res.finish_reason == "stop"
    reports = [r for r in map(progress_of, chunks) if r is not None]
    assert [(r.progress, r.total) for r in reports] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert {(r.server, r.tool, r.ref) for r in reports} == {("everything", call[0], "p1")}
    carriers = [c for c in chunks if progress_of(c) is not None]
    wire = carriers[0].raw.to_wire() if hasattr(carriers[0], "raw") else carriers[0].to_wire()
    assert wire["modelChunk"]["role"] == "tool" and wire["modelChunk"]["content"] == []
    assert all(c.text == "" for c in carriers)
    bars: dict[tuple[str, str, str], str] = {}
    for c in chunks:
        bars = progress_bars(bars, c)
    assert list(bars) == [("everything", call[0], "p1")]
    assert '<progress value="1.000" max="1"' in bars[("everything", call[0], "p1")]
    assert "4 / 4" in bars[("everything", call[0], "p1")]


async def test_an_aborted_turn_stops_its_call_and_the_server_takes_the_next(everything: MCPServer) -> None:
    slow = ("trigger-long-running-operation", "p1", {"duration": 30, "steps": 30})
    model = ScriptedModel(
        [
            tool_call_response(slow),
            tool_call_response(("echo", "e1", {"message": "still here"})),
            text_response("ok"),
        ]
    )
    chat = _agent(everything, model).chat()
    turn = chat.send_stream("run it")
    async for chunk in turn:
        if progress_of(chunk) is not None:
            await chat.abort()  # the call is running: stop it
            break
    res = await turn.response
    assert res.finish_reason == "aborted"
    # calls to one server run one at a time: the aborted one must have let go
    with anyio.fail_after(20):
        res = await chat.send("echo")
    assert res.finish_reason == "stop" and last_tool_output(model) == "Echo: still here"


async def test_an_answer_after_a_restart_is_refused_clearly_even_for_a_gated_tool(
    mcp_js: Path, open_servers: list[MCPServer], tmp_path: Path
) -> None:
    def agent(model: ScriptedModel) -> nba.Agent:
        server = MCPServer.stdio(server_command(mcp_js, "server-everything"), name="everything", trusted=True)
        open_servers.append(server)
        store = nba.SqliteSessionStore(str(tmp_path / "agents.db"))
        return nba.define_agent(
            "everything-agent", model=model, tools=[server], use=[ToolApproval()], store=store
        )

    first = agent(ScriptedModel([tool_call_response(("trigger-elicitation-request", "q1", {}))]))
    chat = first.chat()
    held = await chat.send("ask")
    asked = await chat.resume(restart=[held.interrupts[0].approve()])
    ask = ElicitationRequest.claim(asked.interrupts[0])
    assert ask is not None
    await first.aclose()  # the process that held the open call is gone

    later = agent(ScriptedModel([text_response("never")]))
    out = await later.run(
        nba.AgentInput(resume=nba.ToolResume(restart=[ask.accept({"name": "Ada"})])),
        snapshot_id=asked.snapshot_id,
    )
    assert out.finish_reason == "failed"  # not held for approval again: the answer is refused
    assert out.error is not None and "no longer open" in out.error.message
