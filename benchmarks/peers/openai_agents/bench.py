"""OpenAI Agents SDK worker: ``function_tool(needs_approval=True)`` and ``RunState``.

The model is a custom `agents.models.interface.Model` whose ``get_response``
answers from `common.reply_for` with prebuilt output items and no latency.
A paused run lists ``result.interruptions``; the caller approves on the
``RunState`` (``result.to_state()``, ``state.approve(item)``) and resumes with
``Runner.run(agent, state)``. Tracing is disabled (it would export over the
network). S4 keeps history in the SDK's ``SQLiteSession`` (``":memory:"`` for the
in-memory row, a file for the SQLite row) and the paused ``RunState`` where
the HITL guide says to: serialized (``to_string``) in the application's
storage, here a table in the same SQLite file (or a dict in memory).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import common as c
from agents import Agent, Runner, RunState, SQLiteSession, Usage, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import assistant_message, function_call

set_tracing_disabled(True)


def _facts(items: Any) -> tuple[str, str, str | None, int]:
    if isinstance(items, str):
        return "user", items, None, 1
    last = items[-1]
    get = last.get if isinstance(last, dict) else lambda k, d=None: getattr(last, k, d)
    if get("type") == "function_call_output":
        call_id = get("call_id")
        name = next(
            (
                (i.get("name") if isinstance(i, dict) else getattr(i, "name", None))
                for i in items
                if (i.get("call_id") if isinstance(i, dict) else getattr(i, "call_id", None)) == call_id
                and (i.get("type") if isinstance(i, dict) else getattr(i, "type", None)) == "function_call"
            ),
            None,
        )
        return "tool", "", name, len(items)
    content = get("content")
    text = content if isinstance(content, str) else "".join(part.get("text", "") for part in content or [])
    return "user", text, None, len(items)


class ScriptedModel(Model):
    """A zero-latency model answering from the benchmark's script."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        c.COUNTERS.model_calls += 1
        role, text, tool, n = _facts(input)
        kind, value = c.reply_for(role, text, tool)
        if kind == "text":
            out = [assistant_message(str(value))]
        else:
            args_ = c.WEATHER_ARGS if value == c.WEATHER_TOOL else c.TRANSFER_ARGS
            out = [function_call(str(value), args_, call_id=f"t{n}")]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the benchmark does not stream")


@function_tool(name_override=c.WEATHER_TOOL)
async def get_weather(city: str) -> str:
    """The weather in a city."""
    c.COUNTERS.tool_runs[c.WEATHER_TOOL] += 1
    return "sunny"


@function_tool(name_override=c.TRANSFER_TOOL, needs_approval=True)
async def transfer(amount: int) -> str:
    """Move money (needs approval)."""
    c.COUNTERS.tool_runs[c.TRANSFER_TOOL] += 1
    return "ok"


agent = Agent(name="bench", model=ScriptedModel(), tools=[get_weather, transfer])


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {
        "openai-agents": version("openai-agents"),
        "openai": version("openai"),
        "pydantic": version("pydantic"),
    }


def _text(result: Any) -> str:
    return str(result.final_output)


async def s1(args: argparse.Namespace) -> dict[str, Any]:
    async def once() -> str:
        return _text(await Runner.run(agent, c.PROMPTS["S1"]))

    return await c.iterations("S1", once, n=args.n, warmup=args.warmup)


async def s2(args: argparse.Namespace) -> dict[str, Any]:
    async def once() -> str:
        return _text(await Runner.run(agent, c.PROMPTS["S2"]))

    return await c.iterations("S2", once, n=args.n, warmup=args.warmup)


async def s3(args: argparse.Namespace) -> dict[str, Any]:
    async def once() -> str:
        first = await Runner.run(agent, c.PROMPTS["S3"])
        item = first.interruptions[0]  # the caller finds the pending call through the API
        c.found_pending(item.name)
        state = first.to_state()
        state.approve(item)
        return _text(await Runner.run(agent, state))

    return await c.iterations("S3", once, n=args.n, warmup=args.warmup)


class _PendingStates:
    """Where the application keeps the paused ``RunState`` between two requests."""

    def __init__(self, path: str | None) -> None:
        self.mem: dict[str, str] = {}
        self.conn = sqlite3.connect(path) if path else None
        if self.conn is not None:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("CREATE TABLE IF NOT EXISTS run_states (id TEXT PRIMARY KEY, state TEXT)")

    def put(self, key: str, state: str) -> None:
        if self.conn is None:
            self.mem[key] = state
            return
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO run_states (id, state) VALUES (?, ?)", (key, state))

    def pop(self, key: str) -> str:
        if self.conn is None:
            return self.mem.pop(key)
        row = self.conn.execute("SELECT state FROM run_states WHERE id = ?", (key,)).fetchone()
        with self.conn:
            self.conn.execute("DELETE FROM run_states WHERE id = ?", (key,))
        return str(row[0])


def _session(path: str | None, finish: Any) -> c.Session:
    sid = "bench-conversation"
    shared = None if path else SQLiteSession(sid)  # ":memory:" lives as long as its object
    states = _PendingStates(path)

    def history() -> SQLiteSession:
        return shared if shared is not None else SQLiteSession(sid, path or ":memory:")

    async def send(prompt: str) -> str:
        result = await Runner.run(agent, prompt, session=history())
        item = result.interruptions[0]
        states.put(sid, result.to_state().to_string())
        return str(item.name)  # what the client receives: the paused call

    async def approve(_name: str) -> str:
        state = await RunState.from_string(agent, states.pop(sid))
        for item in state.get_interruptions():
            state.approve(item)
        return _text(await Runner.run(agent, state, session=history()))

    def done() -> int | None:
        if states.conn is not None:
            states.conn.close()
        return finish()

    return c.Session(send, approve, lambda name: name, done)


async def s4_memory(args: argparse.Namespace) -> dict[str, Any]:
    out = await c.cycles(_session(None, lambda: None), count=args.cycles)
    out["store"] = "SQLiteSession(':memory:') + RunState strings in a dict"
    return out


async def s4_sqlite(args: argparse.Namespace) -> dict[str, Any]:
    path = os.path.join(args.workdir, "openai_agents.db")
    out = await c.cycles(_session(path, lambda: c.sqlite_bytes(path)), count=args.cycles)
    out["store"] = "SQLiteSession(file) + RunState strings in a table of the same file"
    return out


SCENARIOS = {"S1": s1, "S2": s2, "S3": s3, "S4-memory": s4_memory, "S4-sqlite": s4_sqlite}

if __name__ == "__main__":
    c.worker_main("openai_agents", versions, SCENARIOS)
