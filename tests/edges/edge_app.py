"""The agent `nb-agents serve` runs in the edge tests: a transfer that pauses for approval.

Configured by environment variables, so each test's server process can differ:

* ``NBA_LEDGER``: a file; every run of the tool appends one JSON line (its
  amount, its idempotency key, the process id) *before* it sleeps;
* ``NBA_TOOL_DELAY``: seconds the tool sleeps after writing its line (a slow side
  effect a client can time out on, abort during, or a stopped server can hold);
* ``NBA_FAIL_FLAG``: while this file exists, the tool raises after its line;
* ``NBA_CHUNKS``: how many 1 KB text chunks the ``chatty`` agent streams per turn.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import nb_agents as nba
from nb_agents.testing import FunctionModel

LEDGER = os.environ.get("NBA_LEDGER", os.devnull)
DELAY = float(os.environ.get("NBA_TOOL_DELAY", "0"))
FAIL_FLAG = os.environ.get("NBA_FAIL_FLAG", "")


def rules(req: nba.GenerateRequest) -> dict[str, Any] | str:
    last = req.messages[-1]
    if last.role == "tool":
        return "transfer done"
    ref = f"t{len(req.messages)}"
    call = {"toolRequest": {"name": "transfer", "ref": ref, "input": {"amount": 500}}}
    return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}


@nba.tool(name="transfer")
async def transfer(amount: int, ctx: nba.ToolContext) -> str:
    """Move money (pauses for approval first)."""
    if not ctx.resumed:
        ctx.interrupt({"amount": amount})
    line = {"amount": amount, "key": getattr(ctx, "idempotency_key", None), "pid": os.getpid()}
    with open(LEDGER, "a") as f:
        f.write(json.dumps(line) + "\n")
    await asyncio.sleep(DELAY)
    if FAIL_FLAG and os.path.exists(FAIL_FLAG):
        raise RuntimeError(f"the bank at /srv/secret/{os.getpid()} is closed")
    return "ok"


bank = nba.define_agent(
    "bank", model=FunctionModel(rules), tools=[transfer], store=nba.InMemorySessionStore()
)


CHUNKS = int(os.environ.get("NBA_CHUNKS", "2000"))


async def _chatter(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
    piece = "x" * 1024
    for i in range(CHUNKS):
        await ctx.send_chunk({"role": "model", "index": 0, "content": [{"text": piece}]})
        if i % 64 == 0:
            await asyncio.sleep(0)
    return "said it all"


chatty = nba.define_custom_agent("chatty", _chatter, store=nba.InMemorySessionStore())
both = [bank, chatty]
