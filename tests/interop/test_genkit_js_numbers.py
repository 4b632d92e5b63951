"""Genkit's JS client re-encodes JSON numbers, and nb_agents compares them as JSON values.

A model's tool call carries floats (``500.0``); JavaScript has one number type, so the
client's copy of that input goes back as ``500`` (and ``-0.0`` as ``0``, ``1e-07`` as
``1e-7``, ``1e16`` as ``10000000000000000``). A restart must match the paused request's
input and a signed state its signature: both compare numbers by value, as Genkit's own
servers do, so the client's echo is the same input and the same state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from server.live import LiveServer

import nb_agents as nba
from nb_agents.server import create_app
from nb_agents.testing import FunctionModel

from .conftest import run_json

FLOATS = {"amount": 500.0, "fee": 0.1, "rate": 1e-07, "cap": 1e16, "credit": -0.0}
# what JavaScript makes of them: the same values
AS_JS_SEES_THEM = {"amount": 500, "fee": 0.1, "rate": 1e-07, "cap": 10**16, "credit": 0}


class Transfer(BaseModel):
    amount: float
    fee: float
    rate: float
    cap: float
    credit: float


class Reply(BaseModel):
    approved: bool


def rules(req: nba.GenerateRequest) -> Any:
    last = req.messages[-1]
    if last.role == "tool":
        return "Done."
    if "transfer" in last.text.lower():
        call = {"toolRequest": {"name": "transferMoney", "ref": "t1", "input": FLOATS}}
        return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}
    return f"You said {last.text} ({len(req.messages)} messages)."


@pytest.fixture
def served() -> Any:
    ran: list[Transfer] = []

    @nba.resumable_tool(name="transferMoney", resume=Reply)
    def transfer_money(inp: Transfer, reply: Reply | None) -> str:
        if reply is None:
            raise nba.Interrupt({"details": "approve?"})
        ran.append(inp)
        return "txn-1"

    def agent(name: str, **kwargs: Any) -> nba.Agent:
        return nba.define_agent(name, model=FunctionModel(rules), tools=[transfer_money], **kwargs)

    server = LiveServer(
        create_app(
            [
                agent("numbersBank", store=nba.InMemorySessionStore()),
                agent("signedNumbers", state_secret="numbers-secret"),
            ]
        )
    )
    server.start()
    try:
        yield server.url, ran
    finally:
        server.stop()


def test_a_restart_and_a_signed_state_echoed_by_javascript_are_accepted(genkit_js: Path, served: Any) -> None:
    url, ran = served
    got = run_json(["node", str(genkit_js / "numbers_flow.mjs"), url], cwd=genkit_js)
    for name in ("serverManaged", "signed"):
        assert "thrown" not in got[name], f"{name}: {got[name]}"
        assert got[name]["input"] == got[name]["sent"] == AS_JS_SEES_THEM
        assert got[name]["resumed"] == ["stop", "Done."]
    assert got["signed"]["next"] == ["stop", "You said thanks (5 messages)."]
    assert [t.model_dump() for t in ran] == [FLOATS, FLOATS]  # the tool ran once per approval
