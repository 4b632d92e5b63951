"""The banking agent that tests/interop/test_scale_out.py serves from two processes.

``nb-agents serve scale_app:agent --store postgresql://...`` (run from this folder)
replaces its in-memory store with the shared Postgres one. Every transfer that really
runs appends ``<amount> <account> pid=<process id>`` to the file named by the
``NB_AGENTS_LEDGER`` environment variable, after a short pause that widens the window
in which a second resume of the same interrupt could run it twice.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import BaseModel

import nb_agents as nba
from nb_agents.testing import FunctionModel

TRANSFER = {"amount": 500, "toAccount": "savings"}


class TransferInput(BaseModel):
    amount: float
    toAccount: str


class ApprovalReply(BaseModel):
    approved: bool


def rules(request: nba.GenerateRequest) -> dict[str, Any] | str:
    last = request.messages[-1]
    if last.role == "tool":
        [part] = [p for p in last.content if p.tool_response]
        output = part.tool_response.output  # type: ignore[union-attr]
        return "Done: transaction txn-123." if output["success"] else "The transfer was not made."
    if "transfer" in last.text.lower():
        call = {"toolRequest": {"name": "transferMoney", "ref": "t1", "input": TRANSFER}}
        return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}
    return f"You said: {last.text} ({len(request.messages)} messages so far)"


@nba.resumable_tool(name="transferMoney", resume=ApprovalReply)
async def transfer_money(inp: TransferInput, reply: ApprovalReply | None) -> dict[str, Any]:
    """Transfer money to a specified account, pausing for user approval."""
    if reply is None:
        raise nba.Interrupt({"details": f"Transfer ${inp.amount:.2f} to {inp.toAccount}"})
    if not reply.approved:
        return {"success": False}
    await asyncio.sleep(0.3)  # a slow side effect: a second resume would overlap it
    with open(os.environ["NB_AGENTS_LEDGER"], "a") as ledger:
        ledger.write(f"{inp.amount:.0f} {inp.toAccount} pid={os.getpid()}\n")
    return {"success": True, "transactionId": "txn-123"}


agent = nba.define_agent(
    "bankingAgent",
    model=FunctionModel(rules),
    system="You are a banking assistant. Use transferMoney to move funds.",
    tools=[transfer_money],
    store=nba.InMemorySessionStore(),  # `--store postgresql://...` replaces it
)
