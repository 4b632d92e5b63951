"""pydantic-ai worker: deferred tools (``requires_approval=True``) with a FunctionModel.

``transfer`` is registered with ``requires_approval=True``; a paused run ends
with a `DeferredToolRequests` output (``output_type=[str, DeferredToolRequests]``)
and the next run gets `DeferredToolResults` built with
``DeferredToolRequests.build_results``. S4 carries the whole `Conversation`
(messages, usage, pending requests) from run to run: in memory through the
shipped `InMemoryConversationStore` (load, run, save); on SQLite through the
documented serialized form (``ConversationTypeAdapter``) in one row per
conversation, since pydantic-ai ships no SQLite store. S4 runs pass
``usage_limits=UsageLimits(request_limit=None)``: a carried Conversation counts its
earlier requests against the default limit of 50, which a long session exceeds.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import common as c
from pydantic_ai import (
    Agent,
    Conversation,
    ConversationTypeAdapter,
    DeferredToolRequests,
    UsageLimits,
)
from pydantic_ai.conversation_store import InMemoryConversationStore
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    c.COUNTERS.model_calls += 1
    last = messages[-1]
    role, text, tool = "user", "", None
    if isinstance(last, ModelRequest):
        for p in last.parts:
            if isinstance(p, ToolReturnPart):
                role, tool = "tool", p.tool_name
            elif isinstance(p, UserPromptPart) and isinstance(p.content, str):
                text += p.content
    kind, value = c.reply_for(role, text, tool)
    if kind == "text":
        return ModelResponse(parts=[TextPart(str(value))])
    args = c.WEATHER_ARGS if value == c.WEATHER_TOOL else c.TRANSFER_ARGS
    return ModelResponse(parts=[ToolCallPart(str(value), dict(args), tool_call_id=f"t{len(messages)}")])


# A Conversation carries its usage from run to run and the default limit is 50 model requests
# per run *including the carried usage*, so a 200-cycle session needs the documented way out.
NO_LIMIT = UsageLimits(request_limit=None)

agent: Agent[None, str | DeferredToolRequests] = Agent(
    FunctionModel(scripted), output_type=[str, DeferredToolRequests]
)


@agent.tool_plain(name=c.WEATHER_TOOL)
async def get_weather(city: str) -> str:
    """The weather in a city."""
    c.COUNTERS.tool_runs[c.WEATHER_TOOL] += 1
    return "sunny"


@agent.tool_plain(name=c.TRANSFER_TOOL, requires_approval=True)
async def transfer(amount: int) -> str:
    """Move money (needs approval)."""
    c.COUNTERS.tool_runs[c.TRANSFER_TOOL] += 1
    return "ok"


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"pydantic-ai-slim": version("pydantic-ai-slim"), "pydantic": version("pydantic")}


def _text(output: Any) -> str:
    if not isinstance(output, str):
        raise c.CheckFailedError(f"expected a text output, got {type(output).__name__}")
    return output


async def s1(args: argparse.Namespace) -> dict[str, Any]:
    async def once() -> str:
        return _text((await agent.run(c.PROMPTS["S1"])).output)

    return await c.iterations("S1", once, n=args.n, warmup=args.warmup)


async def s2(args: argparse.Namespace) -> dict[str, Any]:
    async def once() -> str:
        return _text((await agent.run(c.PROMPTS["S2"])).output)

    return await c.iterations("S2", once, n=args.n, warmup=args.warmup)


async def s3(args: argparse.Namespace) -> dict[str, Any]:
    async def once() -> str:
        first = await agent.run(c.PROMPTS["S3"])
        requests = first.output
        assert isinstance(requests, DeferredToolRequests)
        call = requests.approvals[0]  # the caller finds the pending call through the API
        c.found_pending(call.tool_name)
        results = requests.build_results(approvals={call.tool_call_id: True})
        second = await agent.run(conversation=first.conversation, deferred_tool_results=results)
        return _text(second.output)

    return await c.iterations("S3", once, n=args.n, warmup=args.warmup)


class _SqliteConversations:
    """One row per conversation holding ``ConversationTypeAdapter`` JSON (the documented form)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.conn = sqlite3.connect(path)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, body BLOB NOT NULL)"
        )

    async def load(self, conversation_id: str) -> Conversation | None:
        row = self.conn.execute("SELECT body FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        return ConversationTypeAdapter.validate_json(row[0]) if row else None

    async def save(self, result: Any) -> None:
        conv = result.conversation
        body = ConversationTypeAdapter.dump_json(conv)
        with self.conn:
            self.conn.execute(
                "INSERT INTO conversations (id, body) VALUES (?, ?) "
                "ON CONFLICT (id) DO UPDATE SET body = excluded.body",
                (conv.conversation_id, body),
            )

    def close(self) -> int:
        self.conn.close()
        return c.sqlite_bytes(self.path)


def _session(store: Any, finish: Any) -> c.Session:
    cid = "bench-conversation"

    async def load() -> Conversation:
        return await store.load(cid) or Conversation(conversation_id=cid)

    async def send(prompt: str) -> Any:
        result = await agent.run(prompt, conversation=await load(), usage_limits=NO_LIMIT)
        await store.save(result)
        assert isinstance(result.output, DeferredToolRequests)
        return result.output.approvals[0]  # what the client receives: the paused call

    async def approve(call: ToolCallPart) -> str:
        conv = await load()
        assert conv.deferred_tool_requests is not None
        results = conv.deferred_tool_requests.build_results(approvals={call.tool_call_id: True})
        result = await agent.run(conversation=conv, deferred_tool_results=results, usage_limits=NO_LIMIT)
        await store.save(result)
        return _text(result.output)

    return c.Session(send, approve, lambda call: call.tool_name, finish)


async def s4_memory(args: argparse.Namespace) -> dict[str, Any]:
    out = await c.cycles(_session(InMemoryConversationStore(), lambda: None), count=args.cycles)
    out["store"] = "InMemoryConversationStore"
    return out


async def s4_sqlite(args: argparse.Namespace) -> dict[str, Any]:
    store = _SqliteConversations(os.path.join(args.workdir, "pydantic_ai.db"))
    out = await c.cycles(_session(store, store.close), count=args.cycles)
    out["store"] = "SQLite row of ConversationTypeAdapter JSON (no SQLite store ships)"
    out["notes"].append("pydantic-ai ships no SQLite store: one row per conversation, rewritten each save")
    return out


SCENARIOS = {"S1": s1, "S2": s2, "S3": s3, "S4-memory": s4_memory, "S4-sqlite": s4_sqlite}

if __name__ == "__main__":
    c.worker_main("pydantic_ai", versions, SCENARIOS)
