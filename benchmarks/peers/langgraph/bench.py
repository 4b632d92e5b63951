"""LangGraph worker: a tool-calling graph whose ``transfer`` tool calls ``interrupt()``.

The graph is the documented shape: a ``model`` node (a plain node calling the
scripted function, returning an ``AIMessage``), the prebuilt ``ToolNode`` and
``tools_condition``. ``transfer`` asks with ``interrupt({...})`` and runs only
after ``Command(resume={"approved": True})``; the caller finds the pending call
in the result's ``__interrupt__``. Checkpointers: ``InMemorySaver`` (async API),
``AsyncSqliteSaver`` (async API, needs aiosqlite) and ``SqliteSaver`` (the sync
API: it does not support the async one).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Annotated, Any, TypedDict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import common as c
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def model(state: State) -> dict[str, Any]:
    c.COUNTERS.model_calls += 1
    msgs = state["messages"]
    last = msgs[-1]
    if isinstance(last, ToolMessage):
        kind, value = c.reply_for("tool", "", last.name)
    else:
        kind, value = c.reply_for("user", str(last.content), None)
    if kind == "text":
        return {"messages": [AIMessage(str(value))]}
    args = c.WEATHER_ARGS if value == c.WEATHER_TOOL else c.TRANSFER_ARGS
    call = {"name": str(value), "args": dict(args), "id": f"t{len(msgs)}"}
    return {"messages": [AIMessage("", tool_calls=[call])]}


@tool(c.WEATHER_TOOL)
def get_weather(city: str) -> str:
    """The weather in a city."""
    c.COUNTERS.tool_runs[c.WEATHER_TOOL] += 1
    return "sunny"


@tool(c.TRANSFER_TOOL)
def transfer(amount: int) -> str:
    """Move money (needs approval)."""
    answer = interrupt({"tool": c.TRANSFER_TOOL, "amount": amount})
    if not answer.get("approved"):
        return "denied"
    c.COUNTERS.tool_runs[c.TRANSFER_TOOL] += 1
    return "ok"


builder = StateGraph(State)
builder.add_node("model", model)
builder.add_node("tools", ToolNode([get_weather, transfer]))
builder.add_edge(START, "model")
builder.add_conditional_edges("model", tools_condition)
builder.add_edge("tools", "model")


def versions() -> dict[str, str]:
    from importlib.metadata import version

    names = ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite", "langchain-core", "pydantic")
    return {n: version(n) for n in names}


def _pending_name(result: dict[str, Any]) -> str | None:
    found = result.get("__interrupt__") or ()
    return found[0].value.get("tool") if found else None


_threads = 0


def _config() -> dict[str, Any]:
    global _threads
    _threads += 1
    return {"configurable": {"thread_id": f"t{_threads}"}}


def _last_text(result: dict[str, Any]) -> str:
    return str(result["messages"][-1].content)


async def s1(args: argparse.Namespace) -> dict[str, Any]:
    graph = builder.compile(checkpointer=InMemorySaver())

    async def once() -> str:
        return _last_text(await graph.ainvoke({"messages": [HumanMessage(c.PROMPTS["S1"])]}, _config()))

    return await c.iterations("S1", once, n=args.n, warmup=args.warmup)


async def s2(args: argparse.Namespace) -> dict[str, Any]:
    graph = builder.compile(checkpointer=InMemorySaver())

    async def once() -> str:
        return _last_text(await graph.ainvoke({"messages": [HumanMessage(c.PROMPTS["S2"])]}, _config()))

    return await c.iterations("S2", once, n=args.n, warmup=args.warmup)


async def s3(args: argparse.Namespace) -> dict[str, Any]:
    graph = builder.compile(checkpointer=InMemorySaver())

    async def once() -> str:
        cfg = _config()
        first = await graph.ainvoke({"messages": [HumanMessage(c.PROMPTS["S3"])]}, cfg)
        c.found_pending(_pending_name(first))  # the caller finds the pending call through the API
        return _last_text(await graph.ainvoke(Command(resume={"approved": True}), cfg))

    return await c.iterations("S3", once, n=args.n, warmup=args.warmup)


def _session(graph: Any, finish: Any) -> c.Session:
    """Stateless per request: each ``ainvoke`` loads the thread's checkpoint and saves a new one."""
    cfg = _config()

    async def send(prompt: str) -> dict[str, Any]:
        return await graph.ainvoke({"messages": [HumanMessage(prompt)]}, cfg)

    async def approve(_first: dict[str, Any]) -> str:
        return _last_text(await graph.ainvoke(Command(resume={"approved": True}), cfg))

    return c.Session(send, approve, _pending_name, finish)


async def s4_memory(args: argparse.Namespace) -> dict[str, Any]:
    graph = builder.compile(checkpointer=InMemorySaver())
    out = await c.cycles(_session(graph, lambda: None), count=args.cycles)
    out["store"] = "InMemorySaver"
    return out


async def s4_sqlite(args: argparse.Namespace) -> dict[str, Any]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = os.path.join(args.workdir, "langgraph-async.db")
    async with AsyncSqliteSaver.from_conn_string(path) as saver:
        graph = builder.compile(checkpointer=saver)
        out = await c.cycles(_session(graph, lambda: None), count=args.cycles)
    out["bytes_stored"] = c.sqlite_bytes(path)
    out["store"] = "AsyncSqliteSaver"
    return out


async def s4_sqlite_sync(args: argparse.Namespace) -> dict[str, Any]:
    """The same session through the sync API, since ``SqliteSaver`` has no async methods."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    path = os.path.join(args.workdir, "langgraph-sync.db")
    conn = sqlite3.connect(path, check_same_thread=False)
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    cfg = _config()

    def send(prompt: str) -> dict[str, Any]:
        return graph.invoke({"messages": [HumanMessage(prompt)]}, cfg)

    def approve(_first: dict[str, Any]) -> str:
        return _last_text(graph.invoke(Command(resume={"approved": True}), cfg))

    def finish() -> int:
        conn.close()
        return c.sqlite_bytes(path)

    out = await c.cycles(c.Session(send, approve, _pending_name, finish), count=args.cycles)
    out["store"] = "SqliteSaver (sync invoke)"
    return out


SCENARIOS = {
    "S1": s1,
    "S2": s2,
    "S3": s3,
    "S4-memory": s4_memory,
    "S4-sqlite": s4_sqlite,
    "S4-sqlite-sync": s4_sqlite_sync,
}

if __name__ == "__main__":
    c.worker_main("langgraph", versions, SCENARIOS)
