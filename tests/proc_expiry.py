"""An approval with a deadline on a shared store, driven from separate processes by
tests/test_expiry_multiprocess.py: ``pause`` runs a turn until the approval holds it and
prints the session id; ``sweep`` and ``pending`` wait for a go-file, then notice the
expired hold (``agent.expire_due()`` / ``agent.pending()``) and print the session's leaf.
The default is an approval, so the transfer runs: every run appends a line to a ledger."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import nb_agents as nba
from nb_agents.testing import FunctionModel

EXPIRES_IN = 1.5  # seconds: both racers are up and waiting before it passes


def rules(req: nba.GenerateRequest) -> dict[str, Any] | str:
    if req.messages[-1].role == "tool":
        return "transfer done"
    call = {"toolRequest": {"name": "transfer", "ref": "t1", "input": {"amount": 500}}}
    return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}


def store(where: str) -> nba.SessionStore:
    if where.startswith("postgresql://") or "dbname=" in where:
        from nb_agents.stores.postgres import PostgresSessionStore

        return PostgresSessionStore(where)
    from nb_agents.stores.sqlite import SqliteSessionStore

    return SqliteSessionStore(where)


def build(where: str, ledger: str) -> nba.Agent:
    @nba.tool(name="transfer")
    async def transfer(amount: int) -> str:
        await asyncio.sleep(0.2)  # a slow side effect: the other process races it
        with open(ledger, "a") as f:
            f.write(f"{amount}\n")
        return "ok"

    gate = nba.middleware.ToolApproval(expires_in=EXPIRES_IN, on_expiry=nba.Expiry.approve())
    return nba.define_agent(
        "bank", model=FunctionModel(rules), tools=[transfer], store=store(where), use=[gate]
    )


async def main(argv: list[str]) -> None:
    verb, where, ledger = argv[:3]
    agent = build(where, ledger)
    if verb == "pause":
        out = await agent.run_text("send 500", session_id="acct-1")
        print(out.finish_reason, out.session_id)
        return
    go = Path(argv[3])
    (go.parent / f"ready-{os.getpid()}").touch()
    while not go.exists():
        time.sleep(0.005)
    if verb == "sweep":
        await agent.expire_due()
    else:
        await agent.pending()
    leaf = await agent.get_snapshot(session_id="acct-1")
    assert leaf is not None
    print(leaf.finish_reason, leaf.snapshot_id)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
