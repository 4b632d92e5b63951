"""Error messages on the wire as Genkit writes them, and read back as a local agent has them.

Genkit JS writes a failed turn's error message (the output's, a stored snapshot's) as
``"<STATUS>: <message>"`` for its own errors, and a thrown error's body without the
prefix. Our server writes the same over a real uvicorn; our clients (`RemoteAgent`,
`Chat` raising `AgentError`) take the prefix off again, so a remote output equals a
local one and no message shows its status twice.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import nb_agents as nba
from nb_agents.errors import AgentError, NotFoundError
from nb_agents.remote import remote_agent
from nb_agents.testing import FunctionModel

from .test_wire import HELLO, SSE, frames, post

pytestmark = pytest.mark.anyio

REFUSAL = "the ledger is closed for the night"


def agents() -> list[nba.Agent]:
    async def refuse(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        if inp.message is not None and "close" in inp.message.text:
            raise nba.FailedPreconditionError(REFUSAL)  # an error of nb_agents' own: a GenkitError
        if inp.message is not None and "crash" in inp.message.text:
            raise RuntimeError("a bug, with a secret path in it")  # user code raised: no prefix
        return "ok"

    return [
        nba.define_custom_agent("ledger", refuse, store=nba.InMemorySessionStore()),
        nba.define_agent("plain", model=FunctionModel(lambda r: "hi")),
    ]


def user(text: str) -> dict[str, Any]:
    return {"message": {"role": "user", "content": [{"text": text}]}}


async def result(url: str, body: Any, *, streaming: bool) -> dict[str, Any]:
    res = await post(url, body, headers=SSE if streaming else {})
    assert res.status_code == 200, res.text
    out: dict[str, Any] = frames(res.text)[-1]["result"] if streaming else res.json()["result"]
    return out


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
async def test_a_failed_turns_error_message_carries_the_status_prefix(serve, streaming: bool) -> None:
    base = serve(agents())
    unknown = await result(
        base + "/ledger", {"data": HELLO, "init": {"snapshotId": "nope"}}, streaming=streaming
    )
    assert unknown == {
        "finishReason": "failed",
        "error": {"status": "NOT_FOUND", "message": "NOT_FOUND: Snapshot nope not found."},
    }
    refused = await result(base + "/ledger", {"data": user("close it"), "init": {}}, streaming=streaming)
    assert refused["error"] == {
        "status": "FAILED_PRECONDITION",
        "message": f"FAILED_PRECONDITION: {REFUSAL}",
    }
    # the stored failed snapshot's error, read over HTTP, is written the same way
    snap = await post(base + "/ledger/getSnapshot", {"data": {"sessionId": refused["sessionId"]}})
    assert snap.json()["result"]["error"]["message"] == f"FAILED_PRECONDITION: {REFUSAL}"
    # an exception user code raised is shown by its public text, without a prefix (Genkit JS
    # writes a plain Error's message bare)
    crashed = await result(base + "/ledger", {"data": user("crash"), "init": {}}, streaming=streaming)
    assert crashed["error"]["status"] == "INTERNAL"
    assert crashed["error"]["message"] == "the turn failed: RuntimeError"


async def test_thrown_error_bodies_and_frames_carry_the_bare_message(serve) -> None:
    base = serve(agents())
    body = {"data": HELLO, "init": {"state": {"messages": []}}}
    plain = await post(base + "/ledger", body)
    assert plain.status_code == 400 and plain.json()["message"].startswith("Cannot send 'state'")
    streamed = await post(base + "/ledger", body, headers=SSE)
    assert frames(streamed.text)[-1]["error"]["message"].startswith("Cannot send 'state'")
    missing = await post(base + "/ledger/getSnapshot", {"data": {"snapshotId": "nope"}})
    assert missing.json() == {"status": "NOT_FOUND", "message": "Snapshot nope not found."}


async def test_a_remote_output_equals_the_local_one(serve) -> None:
    local = {a.name: a for a in agents()}
    base = serve(list(local.values()))
    remote = remote_agent(base + "/ledger")
    here = await local["ledger"].run("hello", snapshot_id="nope")
    there = await remote.run("hello", snapshot_id="nope")
    assert here.error is not None and here.error.message == "Snapshot nope not found."
    assert there == here
    here = await local["ledger"].run("close it")
    there = await remote.run("close it")
    assert here.error == there.error and there.error is not None
    assert there.error.message == REFUSAL
    # the snapshot of that failed turn, read through the remote agent, as the store holds it
    stored = await local["ledger"].get_snapshot(session_id=here.session_id)
    read = await remote.get_snapshot(session_id=there.session_id)
    assert stored is not None and read is not None and stored.error is not None
    assert read.error == stored.error


@pytest.mark.parametrize("where", ["local", "remote"])
async def test_agent_error_shows_the_status_once(serve, where: str) -> None:
    agent = agents()[0]
    target = agent if where == "local" else remote_agent(serve(agent) + "/ledger")
    with pytest.raises(AgentError) as failed:
        await target.chat(snapshot_id="nope").send("hello")
    assert (failed.value.status, failed.value.message) == ("NOT_FOUND", "Snapshot nope not found.")
    assert str(failed.value) == "NOT_FOUND: Snapshot nope not found."
    assert failed.value.response.finish_message == "Snapshot nope not found."


def genkit_js_like(request: httpx.Request) -> httpx.Response:
    """What Genkit JS's express handler streams for a failed turn: the prefixed message."""
    out = {
        "finishReason": "failed",
        "error": {"status": "NOT_FOUND", "message": "NOT_FOUND: Snapshot nope not found"},
    }
    return httpx.Response(
        200, headers={"content-type": "text/plain"}, content=f"data: {json.dumps({'result': out})}\n\n"
    )


async def test_against_a_genkit_js_server_the_status_is_not_shown_twice() -> None:
    async with httpx.AsyncClient(transport=httpx.MockTransport(genkit_js_like)) as client:
        remote = remote_agent("http://genkit.test/bank", client=client)
        out = await remote.run("hello", snapshot_id="nope")
        assert out.error is not None and out.error.message == "Snapshot nope not found"
        with pytest.raises(AgentError) as failed:
            await remote.chat(snapshot_id="nope").send("hello")
    assert str(failed.value) == "NOT_FOUND: Snapshot nope not found"


class PrefixingEndpoint(nba.BaseAgent):
    """An agent of one's own whose transport hands back Genkit's wire message as it came."""

    name = "prefixing"

    async def invoke(self, input: Any, init: Any, **kwargs: Any) -> nba.AgentOutput:
        return nba.AgentOutput.model_validate(
            {"finishReason": "failed", "error": {"status": "NOT_FOUND", "message": "NOT_FOUND: gone"}}
        )


async def test_chat_takes_the_prefix_off_whatever_the_endpoint() -> None:
    with pytest.raises(AgentError) as failed:
        await PrefixingEndpoint().chat().send("hello")
    assert (failed.value.status, failed.value.message, str(failed.value)) == (
        "NOT_FOUND",
        "gone",
        "NOT_FOUND: gone",
    )
    assert not isinstance(failed.value, NotFoundError)  # a failed turn is an AgentError, as before
