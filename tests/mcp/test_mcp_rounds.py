"""The 2026-07-28 round trip against a real server (tests/mcp/servers/asker.py, SDK 2): several
questions in one result, a second round carrying the server's state, the state read by a
server started again with the same key, and refused by one without it (the call runs again
and the answers already given are supplied, so no one is asked twice). The server writes a
line per leg it served, so the tests see exactly which requests reached it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import text_response, tool_call_response
from mcp_helpers import last_tool_output
from mcp_servers import SERVERS

import nb_agents as nba
from nb_agents.chat import Chat
from nb_agents.mcp import ElicitationRequest, MCPServer
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio

KEY = "k" * 40
CALL = ("plan_trip", "p1", {"city": "Lisbon"})


def _asker(legs: Path, open_servers: list[MCPServer], key: str | None = KEY) -> MCPServer:
    command = [sys.executable, str(SERVERS / "asker.py"), str(legs), *([key] if key else [])]
    server = MCPServer.stdio(command, name="asker", approval=False)
    open_servers.append(server)
    return server


def _agent(server: MCPServer, model: ScriptedModel, db: Path) -> nba.Agent:
    return nba.define_agent("planner", model=model, tools=[server], store=nba.SqliteSessionStore(str(db)))


def _ask(res: nba.AgentResponse) -> ElicitationRequest:
    assert res.finish_reason == "interrupted", res.finish_reason
    ask = ElicitationRequest.claim(res.interrupts[0])
    assert ask is not None and ask.resumable
    return ask


async def test_each_question_of_a_result_pauses_in_turn_and_the_retry_carries_them_all(
    tmp_path: Path, open_servers: list[MCPServer]
) -> None:
    legs = tmp_path / "legs.txt"
    model = ScriptedModel([tool_call_response(CALL), text_response("planned")])
    chat = _agent(_asker(legs, open_servers), model, tmp_path / "a.db").chat()
    when = _ask(await chat.send("plan my trip"))
    assert when.message == "When do you go to Lisbon?" and when.tool == "plan_trip"
    who = _ask(await chat.resume(restart=[when.accept({"when": "May"})]))
    assert who.message == "Who goes to Lisbon?"
    assert legs.read_text().splitlines() == ["Lisbon answers=- state=no"]  # asked twice, one request
    second = await chat.resume(restart=[who.accept({"who": "Ada"})])
    budget = _ask(second)
    assert budget.message == "Your budget for Lisbon?"
    stored = second.interrupts[0].data["mcp"]["inputRequired"]
    assert stored["requestState"]  # the second round carries the server's state
    assert set(stored) == {"key", "requestState", "given"}  # the one question of its round
    assert [g["answer"] for g in stored["given"]] == [
        {"action": "accept", "content": {"when": "May"}},
        {"action": "accept", "content": {"who": "Ada"}},
    ]
    wrong = budget.accept({"budget": "lots"})
    with pytest.raises(nba.AgentError, match="does not fit its schema: budget: 'lots' is not of type"):
        await chat.resume(restart=[wrong])
    done = await Chat(chat.agent, session_id=chat.session_id).resume(restart=[budget.accept({"budget": 900})])
    assert done.finish_reason == "stop"
    assert last_tool_output(model) == {"result": "Lisbon: Ada on May, budget 900"}
    assert legs.read_text().splitlines() == [
        "Lisbon answers=- state=no",
        "Lisbon answers=when,who state=no",
        "Lisbon answers=budget state=yes",
    ]


@pytest.mark.parametrize("same_key", [True, False])
async def test_after_a_restart_the_state_is_sent_back_or_the_call_runs_again_without_asking_anyone(
    tmp_path: Path, open_servers: list[MCPServer], same_key: bool
) -> None:
    legs, db = tmp_path / "legs.txt", tmp_path / "a.db"
    first = _agent(_asker(legs, open_servers), ScriptedModel([tool_call_response(CALL)]), db)
    chat = first.chat()
    when = _ask(await chat.send("plan my trip"))
    who = _ask(await chat.resume(restart=[when.accept({"when": "May"})]))
    budget = _ask(await chat.resume(restart=[who.accept({"who": "Ada"})]))
    await first.aclose()  # the process that asked, and its server, are gone
    legs.write_text("")

    model = ScriptedModel([text_response("planned")])
    server = _asker(legs, open_servers, KEY if same_key else None)
    later = Chat(_agent(server, model, db), session_id=chat.session_id)
    done = await later.resume(restart=[budget.accept({"budget": 900})])
    assert done.finish_reason == "stop"
    assert last_tool_output(model) == {"result": "Lisbon: Ada on May, budget 900"}
    if same_key:  # one request: the answer with the state the server sealed before it restarted
        assert legs.read_text().splitlines() == ["Lisbon answers=budget state=yes"]
    else:  # refused (by the SDK, before the tool runs), then run again from its start with
        # every answer given so far
        assert legs.read_text().splitlines() == [
            "Lisbon answers=- state=no",
            "Lisbon answers=when,who state=no",
            "Lisbon answers=budget state=yes",
        ]


async def test_a_tool_the_server_adds_is_offered_on_the_next_turn(
    tmp_path: Path, open_servers: list[MCPServer]
) -> None:
    model = ScriptedModel(
        [
            tool_call_response(("learn", "l1", {"name": "wave"})),
            text_response("learned"),
            tool_call_response(("wave", "w1", {})),
            text_response("waved"),
        ]
    )
    chat = _agent(_asker(tmp_path / "legs.txt", open_servers), model, tmp_path / "a.db").chat()
    assert (await chat.send("learn to wave")).finish_reason == "stop"
    assert "wave" not in {d.name for d in model.requests[0].tools}
    # the server said so on the stream of changes this client listens to: listed again
    done = await chat.send("wave")
    assert done.finish_reason == "stop"
    assert "wave" in {d.name for d in model.requests[2].tools}
    assert last_tool_output(model) == {"result": "I am wave"}
