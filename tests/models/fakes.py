"""Fake provider servers for the model tests: `httpx.MockTransport` handlers.

`FakeServer` records every request (and its JSON body) and answers with a
function of the request, or with a queue of canned responses. Nothing here
opens a socket.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import httpx
from pydantic import BaseModel

import nb_agents as nba

Answer = Callable[[httpx.Request, dict[str, Any]], httpx.Response]


class FakeServer:
    """A MockTransport handler that records requests.

    Args:
        answer: Called with (request, decoded JSON body) for each request.
        responses: Or: canned responses (or exceptions to raise), one per call.
    """

    def __init__(
        self, answer: Answer | None = None, responses: Iterable[httpx.Response | Exception] = ()
    ) -> None:
        self.answer = answer
        self.queue = list(responses)
        self.requests: list[httpx.Request] = []
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        self.requests.append(request)
        self.bodies.append(body)
        if self.answer is not None:
            return self.answer(request, body)
        item = self.queue.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))


class Sleeps:
    """An injectable sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json=body, headers=headers)


def sse_body(events: Iterable[Any], *, named: bool = False, done: bool = False) -> bytes:
    """An event-stream body: ``data: <json>`` blocks (with ``event: <type>`` lines if `named`)."""
    out: list[str] = []
    for event in events:
        if named:
            out.append(f"event: {event['type']}\n")
        out.append(f"data: {json.dumps(event)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def sse_response(
    events: Iterable[Any], *, named: bool = False, done: bool = False, split: int = 0
) -> httpx.Response:
    """A streamed answer; with `split`, the bytes arrive in pieces of that size (lines cut in half)."""
    body = sse_body(events, named=named, done=done)
    headers = {"content-type": "text/event-stream"}
    if not split:
        return httpx.Response(200, content=body, headers=headers)

    async def pieces() -> AsyncIterator[bytes]:
        for i in range(0, len(body), split):
            yield body[i : i + split]

    return httpx.Response(200, content=pieces(), headers=headers)


# -- the banking agent the end-to-end tests run on every provider ------------------------


class TransferInput(BaseModel):
    amount: float
    toAccount: str


class TransferOutput(BaseModel):
    success: bool
    transactionId: str | None = None


class ApprovalReply(BaseModel):
    approved: bool


def banking_agent(model: nba.Model) -> tuple[nba.Agent, nba.Tool, dict[str, float]]:
    """getBalance runs freely; transferMoney pauses for approval (a resumable tool)."""
    accounts = {"checking": 1200.0, "savings": 300.0}

    @nba.tool(name="getBalance")
    def get_balance(account: str) -> float:
        """The balance of an account."""
        return accounts[account]

    @nba.resumable_tool(name="transferMoney", resume=ApprovalReply)
    def transfer_money(inp: TransferInput, reply: ApprovalReply | None) -> TransferOutput:
        """Move money from checking; pauses for the user's approval."""
        if reply is None:
            raise nba.Interrupt({"details": f"Transfer ${inp.amount:.2f} to {inp.toAccount}"})
        if not reply.approved:
            return TransferOutput(success=False)
        accounts["checking"] -= inp.amount
        accounts[inp.toAccount] += inp.amount
        return TransferOutput(success=True, transactionId="txn-0001")

    agent = nba.define_agent(
        "bankingAgent",
        model=model,
        system="You are a banking assistant.",
        tools=[get_balance, transfer_money],
        store=nba.InMemorySessionStore(),
        config={"temperature": 0},
    )
    return agent, transfer_money, accounts


async def run_banking_flow(model: nba.Model) -> tuple[nba.AgentResponse, dict[str, float], list[str]]:
    """Send a transfer, approve the pause, return the final response, accounts and streamed text."""
    agent, transfer_money, accounts = banking_agent(model)
    chat = agent.chat()
    first = await chat.send("Transfer $500 to savings")
    assert first.finish_reason == "interrupted"
    assert [i.name for i in first.interrupts] == ["transferMoney"]
    part = first.raw.interrupts()[0]
    call = transfer_money.interrupted(part)
    assert call is not None
    assert call.input == TransferInput(amount=500, toAccount="savings")
    assert call.data == {"details": "Transfer $500.00 to savings"}
    assert accounts == {"checking": 1200.0, "savings": 300.0}  # nothing moved while paused
    turn = chat.resume_stream(restart=[call.restart(ApprovalReply(approved=True))])
    streamed = [chunk.text async for chunk in turn]
    final = await turn.response
    return final, accounts, streamed
