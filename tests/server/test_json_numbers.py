"""JSON numbers compare by value: the echo of a JavaScript client is the same input and state.

A model's tool call carries ``500.0``; JavaScript has one number type and sends it back as
``500`` (Genkit's JS client, a browser page). Restart inputs and signed state are checked
against what the server holds: a number written differently is the same number, a
different number is refused as before and nothing runs. Real uvicorn on 127.0.0.1, raw
JSON bodies as a JS client writes them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

import nb_agents as nba
from nb_agents._engine.signing import StateSigner
from nb_agents._json import canonical, canonical_typed
from nb_agents.testing import FunctionModel
from nb_agents.types import SessionState

from .conftest import Serve

pytestmark = pytest.mark.anyio

SECRET = "numbers-secret"
FLOATS = {"amount": 500.0, "rate": 1e-07, "cap": 1e16, "credit": -0.0}
# JSON.stringify(JSON.parse(...)) of FLOATS: the same numbers
ECHOED = '{"amount":500,"rate":1e-7,"cap":10000000000000000,"credit":0}'
HELLO = {"role": "user", "content": [{"text": "transfer"}]}


class Transfer(BaseModel):
    amount: float
    rate: float
    cap: float
    credit: float


class Reply(BaseModel):
    approved: bool


def rules(req: nba.GenerateRequest) -> Any:
    if req.messages[-1].role == "tool":
        return "Done."
    call = {"toolRequest": {"name": "transferMoney", "ref": "t1", "input": FLOATS}}
    return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}


@pytest.fixture
def bank(serve: Serve) -> tuple[str, list[Transfer]]:
    ran: list[Transfer] = []

    @nba.resumable_tool(name="transferMoney", resume=Reply)
    def transfer_money(inp: Transfer, reply: Reply | None) -> str:
        if reply is None:
            raise nba.Interrupt({"details": "approve?"})
        ran.append(inp)
        return "txn-1"

    def agent(name: str, **kwargs: Any) -> nba.Agent:
        return nba.define_agent(name, model=FunctionModel(rules), tools=[transfer_money], **kwargs)

    url = serve([agent("stored", store=nba.InMemorySessionStore()), agent("signed", state_secret=SECRET)])
    return url, ran


async def send(url: str, body: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.post(url, content=body, headers={"Content-Type": "application/json"})


async def post(url: str, body: str) -> dict[str, Any]:
    res = await send(url, body)
    assert res.status_code == 200, res.text
    return dict(res.json()["result"])


def restart_body(tool_input: str, init: str) -> str:
    call = f'{{"name":"transferMoney","ref":"t1","input":{tool_input}}}'
    part = f'{{"toolRequest":{call},"metadata":{{"resumed":{{"approved":true}}}}}}'
    return f'{{"data":{{"resume":{{"restart":[{part}]}}}},"init":{init}}}'


async def test_a_restart_with_the_numbers_rewritten_runs_and_a_changed_number_does_not(bank: Any) -> None:
    url, ran = bank
    paused = await post(url + "/stored", json.dumps({"data": {"message": HELLO}}))
    assert paused["message"]["content"][0]["toolRequest"]["input"] == FLOATS
    init = json.dumps({"snapshotId": paused["snapshotId"]})
    changed = await post(url + "/stored", restart_body(ECHOED.replace(":500,", ":501,"), init))
    assert changed["finishReason"] == "failed"
    assert (
        changed["error"]["status"] == "INVALID_ARGUMENT" and "modified inputs" in changed["error"]["message"]
    )
    assert ran == []
    done = await post(url + "/stored", restart_body(ECHOED, init))
    assert (done["finishReason"], done["message"]["content"][0]["text"]) == ("stop", "Done.")
    assert [t.model_dump() for t in ran] == [FLOATS]


async def test_a_signed_state_with_the_numbers_rewritten_checks_out_and_a_changed_one_does_not(
    bank: Any,
) -> None:
    url, ran = bank
    paused = await post(url + "/signed", json.dumps({"data": {"message": HELLO}}))
    state = json.dumps(paused["state"])
    assert '"amount": 500.0' in state and '"credit": -0.0' in state
    echoed = state.replace('"amount": 500.0', '"amount": 500').replace('"credit": -0.0', '"credit": 0')
    echoed = echoed.replace('"rate": 1e-07', '"rate": 1e-7').replace(
        '"cap": 1e+16', '"cap": 10000000000000000'
    )
    assert echoed != state
    forged = echoed.replace('"amount": 500', '"amount": 5000')
    refused = await send(url + "/signed", restart_body(ECHOED, f'{{"state":{forged}}}'))
    assert (refused.status_code, refused.json()["status"]) == (403, "PERMISSION_DENIED")
    assert ran == []
    done = await post(url + "/signed", restart_body(ECHOED, f'{{"state":{echoed}}}'))
    assert done["finishReason"] == "stop" and [t.model_dump() for t in ran] == [FLOATS]


def test_canonical_spells_each_number_once_and_keeps_different_numbers_apart() -> None:
    assert (
        canonical(FLOATS)
        == canonical(json.loads(ECHOED))
        == '{"amount":500,"cap":1e+16,"credit":0,"rate":1e-07}'
    )
    assert canonical([True, False, None, 1, 1.5]) == "[true,false,null,1,1.5]"  # bools stay bools
    assert canonical(2**53 + 1) == canonical(float(2**53))  # as JavaScript rounds it
    assert canonical(2**53 - 1) == str(2**53 - 1) and canonical(10**400) == str(10**400)
    assert canonical(0.1 + 0.2) != canonical(0.3) and canonical(500) != canonical(500.5)


def test_a_state_signed_before_numbers_compared_by_value_still_checks_out() -> None:
    signer = StateSigner(SECRET)
    state = SessionState.model_validate(
        {"messages": [{"role": "model", "content": [{"toolRequest": {"name": "t", "input": FLOATS}}]}]}
    )
    wire = state.to_wire()
    old = hmac.new(SECRET.encode(), canonical_typed(wire).encode(), hashlib.sha256).hexdigest()
    assert old != getattr(signer.sign(state), "signature")  # the earlier signature differs ...
    legacy = state.model_copy(update={"signature": old})
    assert signer.verify(legacy, "signed") is legacy  # ... and is still accepted
    tampered = SessionState.model_validate({**legacy.to_wire(), "messages": []})
    with pytest.raises(nba.PermissionDeniedError):
        signer.verify(tampered, "signed")
