"""Trace one send that pauses and one resume: which nb_agents functions each passes through.

Usage::

    .venv/bin/python scripts/trace_turn.py            # counts per phase, modules listed
    .venv/bin/python scripts/trace_turn.py --functions   # every function, per module

The agent is the seed's banking flow (a resumable transfer tool held for
approval) on an `InMemorySessionStore` and the offline `FunctionModel`. A
warm-up cycle runs first, so first-use imports and lazy builds are not counted.
`sys.setprofile` sees every Python call; only functions defined under
``nb_agents/`` count, each once per phase (distinct functions, not calls), and
only named ones (a comprehension, a generator expression or a lambda is listed
with ``--functions`` but not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from types import FrameType
from typing import Any

from pydantic import BaseModel

import nb_agents as nba
from nb_agents.testing import FunctionModel

PACKAGE = str(Path(nba.__file__).resolve().parent)


class Transfer(BaseModel):
    amount: float
    to: str


class Reply(BaseModel):
    approved: bool


@nba.resumable_tool(name="transferMoney", resume=Reply)
async def transfer(inp: Transfer, reply: Reply | None) -> str:
    if reply is None:
        raise nba.Interrupt({"details": f"Transfer ${inp.amount:.2f} to {inp.to}?"})
    return "done" if reply.approved else "cancelled"


def respond(req: nba.GenerateRequest) -> dict[str, Any]:
    last = req.messages[-1]
    if last.role == "tool":
        return {"message": {"role": "model", "content": [{"text": "Transfer finished."}]}}
    call = {"toolRequest": {"name": "transferMoney", "ref": "t1", "input": {"amount": 500, "to": "savings"}}}
    return {"message": {"role": "model", "content": [call]}}


class Tracer:
    def __init__(self) -> None:
        self.seen: dict[str, set[str]] = defaultdict(set)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        path = frame.f_code.co_filename
        if not path.startswith(PACKAGE):
            return
        module = "nb_agents" + path[len(PACKAGE) :].removesuffix(".py").replace("/", ".")
        self.seen[module.removesuffix(".__init__")].add(frame.f_code.co_qualname)

    @property
    def functions(self) -> int:
        """Named functions: comprehensions, generator expressions and lambdas are not counted."""
        return sum(1 for names in self.seen.values() for n in names if not n.endswith(">"))


async def cycle(agent: nba.Agent, tracers: tuple[Tracer, Tracer] | None = None) -> None:
    chat = agent.chat()
    if tracers:
        sys.setprofile(tracers[0])
    res = await chat.send("Transfer $500 to savings")
    sys.setprofile(None)
    assert res.finish_reason == "interrupted", res
    call = transfer.interrupted(res.interrupts[0].part)
    assert call is not None
    part = call.restart(Reply(approved=True))
    if tracers:
        sys.setprofile(tracers[1])
    done = await chat.resume(restart=[part])
    sys.setprofile(None)
    assert done.text == "Transfer finished.", done


def report(name: str, tracer: Tracer, functions: bool) -> None:
    print(f"{name}: {tracer.functions} functions in {len(tracer.seen)} modules")
    for module in sorted(tracer.seen):
        names = sorted(tracer.seen[module])
        print(f"  {module} ({len(names)})" + (": " + ", ".join(names) if functions else ""))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", action="store_true", help="list every function")
    parser.add_argument("--store", choices=["memory", "sqlite"], default="sqlite", help="the session store")
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    store: nba.SessionStore = (
        nba.SqliteSessionStore(Path(tmp.name) / "trace.db")
        if args.store == "sqlite"
        else nba.InMemorySessionStore()
    )
    agent = nba.define_agent("bank", model=FunctionModel(respond), tools=[transfer], store=store)
    await cycle(agent)  # warm-up: imports, schema builds, caches
    send, resume = Tracer(), Tracer()
    await cycle(agent, (send, resume))
    report("send that pauses", send, args.functions)
    report("resume", resume, args.functions)


if __name__ == "__main__":
    asyncio.run(main())
