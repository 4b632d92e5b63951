"""A banking agent on a SQLite file, driven from separate processes by
tests/test_multiprocess.py: ``pause`` runs a turn until it pauses and prints
the snapshot id; ``resume`` waits for a go-file, then answers that interrupt.
Every transfer that really runs appends a line to a ledger file."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import nb_agents as nba
from nb_agents.stores.sqlite import SqliteSessionStore
from nb_agents.testing import FunctionModel


def rules(req: nba.GenerateRequest) -> dict[str, Any] | str:
    if req.messages[-1].role == "tool":
        return "transfer done"
    call = {"toolRequest": {"name": "transfer", "ref": "t1", "input": {"amount": 500}}}
    return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}


def build(db: str, ledger: str) -> nba.Agent:
    @nba.tool(name="transfer")
    async def transfer(amount: int, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"amount": amount})
        await asyncio.sleep(0.2)  # a slow side effect: the other process races it
        with open(ledger, "a") as f:
            f.write(f"{amount}\n")
        return "ok"

    return nba.define_agent(
        "bank", model=FunctionModel(rules), tools=[transfer], store=SqliteSessionStore(db)
    )


async def main(argv: list[str]) -> None:
    verb, db, ledger = argv[:3]
    agent = build(db, ledger)
    if verb == "pause":
        out = await agent.run_text("send 500", session_id="acct-1")
        print(out.finish_reason, out.snapshot_id)
        return
    go = Path(argv[3])
    (turn,) = await agent.pending()  # read before the race: the other process may finish first
    (go.parent / f"ready-{os.getpid()}").touch()  # ready to race
    while not go.exists():
        time.sleep(0.005)
    res = await turn.chat().resume(restart=[turn.interrupts[0].restart(resumed=True)])
    print(res.finish_reason, res.snapshot_id)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
