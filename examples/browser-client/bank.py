"""The seed's banking agent, on an offline model, for the browser client example.

Serve it with ``nb-agents serve bank:agent`` from this folder (see README.md).
``bankingAgent`` asks ``userApproval`` (an interrupt: it never runs, the person
answers it) before it calls ``transferMoney`` (a real tool). The model is a
rule-based stand-in, so no API key or network is needed: "Transfer $500 to
savings." asks for approval; an approval runs the transfer and the reply is
streamed word by word.

Every transfer that runs appends one JSON line (amount, account, who asked) to
the file named by ``BANK_LEDGER``, when that variable is set.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any

from pydantic import BaseModel

import nb_agents as nba
from nb_agents.models.base import ModelChunkSink

WORD_DELAY = 0.05  # seconds between streamed words, so a person sees the reply arrive


class Approval(BaseModel):
    action: str
    details: str


class Decision(BaseModel):
    approved: bool
    feedback: str | None = None


class TransferInput(BaseModel):
    amount: float
    toAccount: str  # noqa: N815 - the seed's wire names


class TransferOutput(BaseModel):
    success: bool
    transactionId: str  # noqa: N815


user_approval = nba.define_interrupt(
    name="userApproval",
    description="Ask the user for approval before a sensitive action.",
    input_schema=Approval,
    output_schema=Decision,
)


@nba.tool(name="transferMoney")
def transfer_money(inp: TransferInput, ctx: nba.ToolContext) -> TransferOutput:
    """Transfer money to a specified account."""
    who = (ctx.context.get("auth") or {}).get("uid")
    ledger = os.environ.get("BANK_LEDGER")
    count = 1
    if ledger:
        with open(ledger, "a+", encoding="utf-8") as f:
            f.seek(0)
            count = len(f.readlines()) + 1
            f.write(json.dumps({"amount": inp.amount, "toAccount": inp.toAccount, "by": who}) + "\n")
    return TransferOutput(success=True, transactionId=f"txn-{count:04d}")


_ASK = re.compile(
    r"\$\s*(?P<amount>\d[\d,]*(?:\.\d+)?)\s+to\s+(?:my\s+)?(?P<account>.+?)(?:\s+account)?[.!]?$", re.I
)


def _asked(req: nba.GenerateRequest) -> tuple[float, str] | None:
    """The amount and account of the latest user message that asked for a transfer."""
    for message in reversed(req.messages):
        if message.role == "user":
            m = _ASK.search(message.text.strip())
            return (float(m["amount"].replace(",", "")), m["account"]) if m else None
    return None


def _call(name: str, ref: str, inp: dict[str, Any]) -> nba.GenerateResponse:
    return nba.GenerateResponse.model_validate(
        {
            "message": {
                "role": "model",
                "content": [{"toolRequest": {"name": name, "ref": ref, "input": inp}}],
            },
            "finishReason": "stop",
        }
    )


class OfflineBank:
    """A rule-based stand-in for a real model; text answers stream a word at a time."""

    name = "offline-bank"

    async def generate(
        self, request: nba.GenerateRequest, on_chunk: ModelChunkSink | None = None
    ) -> nba.GenerateResponse:
        last = request.messages[-1]
        asked = _asked(request)
        if last.role == "tool":
            (response,) = [p.tool_response for p in last.content if p.tool_response]
            out = response.output if isinstance(response.output, dict) else {}
            if response.name == "userApproval" and out.get("approved") and asked:
                amount, account = asked
                return _call("transferMoney", "t1", {"amount": amount, "toAccount": account})
            if response.name == "transferMoney":
                amount, account = asked or (0.0, "?")
                text = f"Done: ${amount:,.2f} went to {account} (transaction {out.get('transactionId')})."
            else:
                text = "OK, I did not transfer anything." + (
                    f" You said: {out['feedback']}" if out.get("feedback") else ""
                )
        elif asked:
            amount, account = asked
            details = f"Transfer ${amount:,.2f} from checking to {account}."
            return _call("userApproval", "a1", {"action": "transferMoney", "details": details})
        else:
            text = "I can move money for you: try 'Transfer $500 to savings.'"
        if on_chunk is not None:
            for word in re.findall(r"\S+\s*", text):
                await asyncio.sleep(WORD_DELAY)
                await on_chunk(
                    nba.ModelResponseChunk.model_validate({"role": "model", "content": [{"text": word}]})
                )
        return nba.GenerateResponse.model_validate(
            {"message": {"role": "model", "content": [{"text": text}]}, "finishReason": "stop"}
        )


agent = nba.define_agent(
    "bankingAgent",
    model=OfflineBank(),
    system="You are a banking assistant. ALWAYS use the userApproval interrupt to confirm "
    "before executing transferMoney.",
    tools=[user_approval, transfer_money],
    store=nba.InMemorySessionStore(),
)
