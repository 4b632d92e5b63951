"""Model config: the agent's, with per-call keys laid over it for that call only."""

from __future__ import annotations

import pytest
from helpers import text_response

import nb_agents as nba
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_per_call_config_overrides_the_agents_for_that_call_only() -> None:
    model = ScriptedModel([text_response(f"r{i}") for i in range(4)])
    agent = nba.define_agent("cfg", model=model, config={"temperature": 0.2, "maxOutputTokens": 100})
    chat = agent.chat()
    await chat.send("a", config={"temperature": 0.9})
    await chat.send("b")
    await agent.run_text("c", config={"topP": 0.5})
    turn = chat.send_stream("d", config={"maxOutputTokens": 5})
    [c async for c in turn]
    await turn.response
    assert [r.config for r in model.requests] == [
        {"temperature": 0.9, "maxOutputTokens": 100},
        {"temperature": 0.2, "maxOutputTokens": 100},
        {"temperature": 0.2, "maxOutputTokens": 100, "topP": 0.5},
        {"temperature": 0.2, "maxOutputTokens": 5},
    ]


def test_per_call_config_through_the_sync_twin() -> None:
    model = ScriptedModel([text_response("x")])
    agent = nba.define_agent("cfg", model=model)
    agent.chat().send_sync("a", config={"temperature": 0})
    assert model.requests[0].config == {"temperature": 0}
