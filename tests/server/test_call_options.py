"""Per-call options over a real HTTP connection: ``config`` reaches the served model.

The server runs under uvicorn on 127.0.0.1 in its own thread (its own event
loop), so nothing of the client's call can reach it but what the request carries.
"""

from __future__ import annotations

import httpx
import pytest
from helpers import text_response

import nb_agents as nba
from nb_agents.testing import ScriptedModel

from .conftest import Serve
from .live import banking_agent

pytestmark = pytest.mark.anyio


def echo_agent(responses: int = 3) -> tuple[nba.Agent, ScriptedModel]:
    model = ScriptedModel([text_response("ok")] * responses)
    agent = nba.define_agent(
        "cfg",
        model=model,
        config={"temperature": 0.2, "maxOutputTokens": 100},
        store=nba.InMemorySessionStore(),
    )
    return agent, model


async def test_config_sent_by_remote_agent_reaches_the_served_model(serve: Serve) -> None:
    agent, model = echo_agent()
    url = serve(agent)
    remote = nba.remote_agent(f"{url}/cfg")
    chat = remote.chat()
    await chat.send("a", config={"temperature": 0.9})
    await chat.send("b")
    out = await remote.run("c", config={"topP": 0.5})
    assert out.finish_reason == "stop"
    assert [r.config for r in model.requests] == [
        {"temperature": 0.9, "maxOutputTokens": 100},
        {"temperature": 0.2, "maxOutputTokens": 100},
        {"temperature": 0.2, "maxOutputTokens": 100, "topP": 0.5},
    ]


async def test_config_of_a_resume_applies_to_its_continuation(serve: Serve) -> None:
    agent, _, executed = banking_agent(nba.InMemorySessionStore())
    model = agent.handler.model  # type: ignore[attr-defined]
    url = serve(agent)
    chat = nba.remote_agent(f"{url}/bankingAgent").chat()
    res = await chat.send("Transfer $500 to savings")
    call = res.interrupts[0]
    done = await chat.resume(restart=[call.restart(resumed={"approved": True})], config={"temperature": 0})
    assert done.text == "Done: transaction txn-123." and len(executed) == 1
    assert model.requests[0].config is None
    assert model.requests[1].config == {"temperature": 0}


async def test_the_sync_twin_sends_config_too(serve: Serve) -> None:
    agent, model = echo_agent()
    url = serve(agent)
    chat = nba.remote_agent(f"{url}/cfg").chat()
    chat.send_sync("a", config={"maxOutputTokens": 7})
    assert (
        nba.remote_agent(f"{url}/cfg").run_text_sync("b", config={"temperature": 1}).finish_reason == "stop"
    )
    assert [r.config for r in model.requests] == [
        {"temperature": 0.2, "maxOutputTokens": 7},
        {"temperature": 1, "maxOutputTokens": 100},
    ]


async def test_a_config_key_the_server_does_not_allow_is_refused_before_anything_runs(serve: Serve) -> None:
    agent, model = echo_agent()
    url = serve(agent)
    remote = nba.remote_agent(f"{url}/cfg")
    with pytest.raises(nba.InvalidArgumentError, match="'model', 'n'.*does not let clients set") as info:
        await remote.chat().send("a", config={"n": 50, "model": "something-expensive", "temperature": 0})
    assert info.value.status == "INVALID_ARGUMENT"
    assert model.calls == 0
    assert await agent.store.session_ids() == []  # type: ignore[union-attr]


async def test_call_config_keys_widens_or_closes_what_clients_may_set(serve: Serve) -> None:
    open_agent, open_model = echo_agent()
    closed_agent, closed_model = echo_agent()
    open_url = serve(open_agent, call_config_keys=None)
    closed_url = serve(closed_agent, call_config_keys=())
    await nba.remote_agent(f"{open_url}/cfg").run("a", config={"seed": 7})
    assert open_model.requests[0].config == {"temperature": 0.2, "maxOutputTokens": 100, "seed": 7}
    with pytest.raises(nba.InvalidArgumentError, match="accepted: none"):
        await nba.remote_agent(f"{closed_url}/cfg").run("a", config={"temperature": 0})
    assert closed_model.calls == 0
    assert (await nba.remote_agent(f"{closed_url}/cfg").run("a")).finish_reason == "stop"


async def test_config_must_be_an_object(serve: Serve) -> None:
    agent, model = echo_agent()
    url = serve(agent)
    body = {"data": {"message": {"role": "user", "content": [{"text": "a"}]}}, "init": {}, "config": [1]}
    async with httpx.AsyncClient() as client:
        res = await client.post(f"{url}/cfg", json=body)
    assert res.status_code == 400
    assert res.json()["message"] == "'config' must be a JSON object of model settings, got an array"
    assert model.calls == 0


async def test_context_is_never_sent_to_a_remote_agent(serve: Serve) -> None:
    agent, model = echo_agent()
    url = serve(agent)
    chat = nba.remote_agent(f"{url}/cfg").chat()
    with pytest.raises(nba.InvalidArgumentError, match="context_provider"):
        await chat.send("a", context={"auth": {"uid": "mallory"}})
    assert model.calls == 0


async def test_a_genkit_shaped_request_without_config_is_unchanged(serve: Serve) -> None:
    agent, model = echo_agent()
    url = serve(agent)
    body = {"data": {"message": {"role": "user", "content": [{"text": "a"}]}}, "init": {}}
    async with httpx.AsyncClient() as client:
        res = await client.post(f"{url}/cfg", json=body)
    assert res.status_code == 200 and res.json()["result"]["finishReason"] == "stop"
    assert model.requests[0].config == {"temperature": 0.2, "maxOutputTokens": 100}
