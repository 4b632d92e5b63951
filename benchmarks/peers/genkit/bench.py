"""Genkit Python worker: the agent API of ``genkit.exp`` (Genkit, define_agent, chat).

The model is a custom model action (``ai.define_model``) answering from
`common.reply_for` with no latency. ``transfer`` raises ``genkit.Interrupt``
until it is restarted with resumed metadata (``AgentInterrupt.restart(
resumed_metadata={"toolApproved": True})``); Genkit Python 0.12 ships no
ToolApproval middleware, so the tool checks ``ctx.is_resumed()`` itself, as the
interrupts guide shows. Genkit Python ships `InMemorySessionStore` and
`FileSessionStore` but no SQLite store: the persistent S4 row uses the file store.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import common as c
from genkit import ActionRunContext, Interrupt, ModelRequest, ModelResponse, ToolRunContext
from genkit.exp import FileSessionStore, Genkit, InMemorySessionStore
from genkit.model import Message, Part
from pydantic import BaseModel

ai = Genkit()


async def scripted(req: ModelRequest, ctx: ActionRunContext) -> ModelResponse:
    c.COUNTERS.model_calls += 1
    last = req.messages[-1]
    tool = None
    text = ""
    for p in last.content:
        root = getattr(p, "root", p)
        if getattr(root, "tool_response", None) is not None:
            tool = root.tool_response.name
        if getattr(root, "text", None):
            text += root.text
    kind, value = c.reply_for(str(last.role), text, tool)
    if kind == "text":
        return ModelResponse(
            message=Message(role="model", content=[Part(text=str(value))]), finish_reason="stop"
        )
    args = c.WEATHER_ARGS if value == c.WEATHER_TOOL else c.TRANSFER_ARGS
    part = Part.from_tool_request(name=str(value), ref=f"t{len(req.messages)}", input=args)
    return ModelResponse(message=Message(role="model", content=[part]), finish_reason="stop")


ai.define_model(name="scripted", fn=scripted)


class WeatherIn(BaseModel):
    city: str


class TransferIn(BaseModel):
    amount: int


@ai.tool(name=c.WEATHER_TOOL)
async def get_weather(inp: WeatherIn) -> str:
    """The weather in a city."""
    c.COUNTERS.tool_runs[c.WEATHER_TOOL] += 1
    return "sunny"


@ai.tool(name=c.TRANSFER_TOOL)
async def transfer(inp: TransferIn, ctx: ToolRunContext) -> str:
    """Move money (needs approval)."""
    if not (ctx.resumed_metadata or {}).get("toolApproved"):
        raise Interrupt({"message": "approve the transfer?"})
    c.COUNTERS.tool_runs[c.TRANSFER_TOOL] += 1
    return "ok"


_agents = 0


def make_agent(store: Any) -> Any:
    global _agents
    _agents += 1
    return ai.define_agent(
        name=f"bench{_agents}", model="scripted", tools=[get_weather, transfer], store=store
    )


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"genkit": version("genkit"), "pydantic": version("pydantic")}


def _approve(pause: Any) -> Any:
    return pause.restart(resumed_metadata={"toolApproved": True})


async def s1(args: argparse.Namespace) -> dict[str, Any]:
    agent = make_agent(InMemorySessionStore())

    async def once() -> str:
        return (await agent.chat().send(c.PROMPTS["S1"])).text

    return await c.iterations("S1", once, n=args.n, warmup=args.warmup)


async def s2(args: argparse.Namespace) -> dict[str, Any]:
    agent = make_agent(InMemorySessionStore())

    async def once() -> str:
        return (await agent.chat().send(c.PROMPTS["S2"])).text

    return await c.iterations("S2", once, n=args.n, warmup=args.warmup)


async def s3(args: argparse.Namespace) -> dict[str, Any]:
    agent = make_agent(InMemorySessionStore())

    async def once() -> str:
        chat = agent.chat()
        res = await chat.send(c.PROMPTS["S3"])
        pause = res.interrupts[0]
        c.found_pending(pause.name)
        res = await chat.resume(restart=[_approve(pause)])
        return res.text

    return await c.iterations("S3", once, n=args.n, warmup=args.warmup)


def _session(agent: Any, finish: Any) -> c.Session:
    where: dict[str, str | None] = {"snapshot_id": None}

    def chat() -> Any:
        sid = where["snapshot_id"]
        return agent.chat(snapshot_id=sid) if sid else agent.chat()

    async def send(prompt: str) -> Any:
        res = await chat().send(prompt)
        where["snapshot_id"] = res.snapshot_id
        return res.interrupts[0]

    async def approve(pause: Any) -> str:
        res = await chat().resume(restart=[_approve(pause)])
        where["snapshot_id"] = res.snapshot_id
        return res.text

    return c.Session(send, approve, lambda p: p.name, finish)


async def s4_memory(args: argparse.Namespace) -> dict[str, Any]:
    agent = make_agent(InMemorySessionStore())
    out = await c.cycles(_session(agent, lambda: None), count=args.cycles)
    out["store"] = "InMemorySessionStore"
    return out


async def s4_sqlite(args: argparse.Namespace) -> dict[str, Any]:
    path = os.path.join(args.workdir, "genkit-sessions")
    os.makedirs(path, exist_ok=True)
    agent = make_agent(FileSessionStore(path))
    out = await c.cycles(_session(agent, lambda: c.dir_bytes(path)), count=args.cycles)
    out["store"] = "FileSessionStore (genkit 0.12 has no SQLite session store)"
    out["notes"].append(
        "persistent row uses genkit.exp.FileSessionStore: Genkit Python ships no SQLite store"
    )
    return out


SCENARIOS = {"S1": s1, "S2": s2, "S3": s3, "S4-memory": s4_memory, "S4-sqlite": s4_sqlite}

if __name__ == "__main__":
    c.worker_main("genkit", versions, SCENARIOS)
