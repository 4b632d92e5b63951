"""nb_agents worker: the scenarios through the documented chat API.

Runs in the project's own ``.venv``. The model is `nb_agents.testing.FunctionModel`
answering from `common.reply_for`; approval is `nba.middleware.ToolApproval`
with ``get_weather`` allowed, so ``transfer`` pauses until approved with
``AgentInterrupt.approve()``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import common as c

import nb_agents as nba
from nb_agents.testing import FunctionModel


def _model(req: nba.GenerateRequest) -> dict[str, Any] | str:
    c.COUNTERS.model_calls += 1
    last = req.messages[-1]
    tool = None
    if last.role == "tool":
        resp = next(p.tool_response for p in last.content if p.tool_response is not None)
        tool = resp.name
    kind, value = c.reply_for(last.role, last.text, tool)
    if kind == "text":
        return str(value)
    args = c.WEATHER_ARGS if value == c.WEATHER_TOOL else c.TRANSFER_ARGS
    ref = f"t{len(req.messages)}"  # unique within a session
    return {
        "message": {
            "role": "model",
            "content": [{"toolRequest": {"name": value, "ref": ref, "input": args}}],
        },
        "finishReason": "stop",
    }


@nba.tool(name=c.WEATHER_TOOL)
async def get_weather(city: str) -> str:
    """The weather in a city."""
    c.COUNTERS.tool_runs[c.WEATHER_TOOL] += 1
    return "sunny"


@nba.tool(name=c.TRANSFER_TOOL)
async def transfer(amount: int) -> str:
    """Move money (needs approval)."""
    c.COUNTERS.tool_runs[c.TRANSFER_TOOL] += 1
    return "ok"


def make_agent(store: nba.SessionStore) -> nba.Agent:
    return nba.define_agent(
        "bench",
        model=FunctionModel(_model),
        tools=[get_weather, transfer],
        store=store,
        use=[nba.middleware.ToolApproval(allowed_tools=[c.WEATHER_TOOL])],
    )


def versions() -> dict[str, str]:
    import pydantic

    return {"nb_agents": nba.__version__, "pydantic": pydantic.VERSION}


async def s1(args: argparse.Namespace) -> dict[str, Any]:
    agent = make_agent(nba.InMemorySessionStore())

    async def once() -> str:
        res = await agent.chat().send(c.PROMPTS["S1"])
        return res.text

    return await c.iterations("S1", once, n=args.n, warmup=args.warmup)


async def s2(args: argparse.Namespace) -> dict[str, Any]:
    agent = make_agent(nba.InMemorySessionStore())

    async def once() -> str:
        res = await agent.chat().send(c.PROMPTS["S2"])
        return res.text

    return await c.iterations("S2", once, n=args.n, warmup=args.warmup)


async def s3(args: argparse.Namespace) -> dict[str, Any]:
    agent = make_agent(nba.InMemorySessionStore())

    async def once() -> str:
        chat = agent.chat()
        res = await chat.send(c.PROMPTS["S3"])
        pause = res.interrupts[0]  # the caller finds the pending call through the API
        c.found_pending(pause.name)
        res = await chat.resume(restart=[pause.approve()])
        return res.text

    return await c.iterations("S3", once, n=args.n, warmup=args.warmup)


async def s3_sync(args: argparse.Namespace) -> dict[str, Any]:
    """S3 through the ``_sync`` twins (the portal-thread overhead), from plain sync code."""
    agent = make_agent(nba.InMemorySessionStore())

    def once() -> str:
        chat = agent.chat()
        res = chat.send_sync(c.PROMPTS["S3"])
        pause = res.interrupts[0]
        c.found_pending(pause.name)
        return chat.resume_sync(restart=[pause.approve()]).text

    return await c.iterations("S3", once, n=args.n, warmup=args.warmup)


def _session(agent: nba.Agent, finish: Any) -> c.Session:
    """Stateless per request: each request opens a fresh chat at the last snapshot id."""
    where: dict[str, str | None] = {"snapshot_id": None}

    async def send(prompt: str) -> Any:
        res = await agent.chat(snapshot_id=where["snapshot_id"]).send(prompt)
        where["snapshot_id"] = res.snapshot_id
        return res.interrupts[0]  # what the client receives: the paused call

    async def approve(pause: Any) -> str:
        res = await agent.chat(snapshot_id=where["snapshot_id"]).resume(restart=[pause.approve()])
        where["snapshot_id"] = res.snapshot_id
        return res.text

    return c.Session(send, approve, lambda p: p.name, finish)


async def s4_memory(args: argparse.Namespace) -> dict[str, Any]:
    agent = make_agent(nba.InMemorySessionStore())
    out = await c.cycles(_session(agent, lambda: None), count=args.cycles)
    out["store"] = "nba.InMemorySessionStore"
    return out


async def s4_sqlite(args: argparse.Namespace) -> dict[str, Any]:
    path = os.path.join(args.workdir, "nb_agents.db")
    store = nba.SqliteSessionStore(path)
    agent = make_agent(store)

    def finish() -> int:
        store.close()
        return c.sqlite_bytes(path)

    out = await c.cycles(_session(agent, finish), count=args.cycles)
    out["store"] = "nba.SqliteSessionStore"
    return out


SCENARIOS = {"S1": s1, "S2": s2, "S3": s3, "S3-sync": s3_sync, "S4-memory": s4_memory, "S4-sqlite": s4_sqlite}

if __name__ == "__main__":
    c.worker_main("nb_agents", versions, SCENARIOS)
