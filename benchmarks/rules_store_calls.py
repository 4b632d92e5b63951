"""Store round trips of an S2 turn whose tool is allowed by an approval rule (issue 15).

S2 is one turn with one tool call that runs without asking. This script plays
it with the tool allowed three ways and counts the store calls of the turn
(each method of the store object is wrapped with a counter here, not in the
library):

* ``allowed_tools``: ``ToolApproval(allowed_tools=["get_weather"])``, today's S2;
* ``static rule``: ``ToolApproval(rules=[ApprovalRule("get_weather")])``;
* ``session rule``: ``ToolApproval()`` and a per-session rule made by an
  earlier ``approve(always=True)`` in the same session.

Each is measured for a turn that starts a session (not possible for a session
rule: it needs a session) and for a turn that continues one (``chat.send`` on
the chat of an earlier turn), on the in-memory and the SQLite store; also the
median wall time of such a turn. Numbers are reported, never asserted.

Usage::

    .venv/bin/python benchmarks/rules_store_calls.py [--n 200]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import nb_agents as nba  # noqa: E402
from nb_agents.testing import FunctionModel  # noqa: E402

TOOL = "get_weather"
METHODS = (
    "get_snapshot",
    "get_latest",
    "save_snapshot",
    "claim_resume",
    "replace_claim",
    "release_claim",
    "wait_changed",
    "session_ids",
    "add_audit",
    "audit",
)


def _model(req: nba.GenerateRequest) -> Any:
    last = req.messages[-1]
    if last.role == "tool":
        return "sunny"
    ref = f"t{len(req.messages)}"
    return {
        "message": {
            "role": "model",
            "content": [{"toolRequest": {"name": TOOL, "ref": ref, "input": {"city": "Paris"}}}],
        },
        "finishReason": "stop",
    }


@nba.tool(name=TOOL)
async def get_weather(city: str) -> str:
    """The weather in a city."""
    return "sunny"


def counted(store: nba.SessionStore) -> collections.Counter[str]:
    """Wrap `store`'s methods (on the instance) so that each call is counted."""
    calls: collections.Counter[str] = collections.Counter()
    for name in METHODS:
        method = getattr(store, name, None)
        if method is None:
            continue

        def wrap(fn: Callable[..., Awaitable[Any]], name: str = name) -> Callable[..., Awaitable[Any]]:
            async def call(*args: Any, **kwargs: Any) -> Any:
                calls[name] += 1
                return await fn(*args, **kwargs)

            return call

        setattr(store, name, wrap(method))
    return calls


def agent(store: nba.SessionStore, how: str) -> nba.Agent:
    if how == "allowed_tools":
        gate = nba.middleware.ToolApproval(allowed_tools=[TOOL])
    elif how == "static rule":
        gate = nba.middleware.ToolApproval(rules=[nba.ApprovalRule(TOOL)])
    else:
        gate = nba.middleware.ToolApproval()
    return nba.define_agent(
        "bench", model=FunctionModel(_model), tools=[get_weather], store=store, use=[gate]
    )


async def session_with_rule(a: nba.Agent) -> nba.Chat:
    chat = a.chat()
    held = await chat.send("weather?")
    assert held.finish_reason == "interrupted"
    res = await chat.resume(restart=[held.interrupts[0].approve(always=True)])
    assert res.text == "sunny"
    return chat


async def measure(kind: str, how: str, n: int, tmp: str) -> dict[str, Any]:
    store: nba.SessionStore = (
        nba.InMemorySessionStore()
        if kind == "memory"
        else nba.SqliteSessionStore(os.path.join(tmp, f"{how}.db"))
    )
    a = agent(store, how)
    out: dict[str, Any] = {"store": kind, "allowed by": how}
    calls = counted(store)
    if how != "session rule":
        calls.clear()
        res = await a.chat().send("weather?")
        assert res.text == "sunny" and res.finish_reason == "stop"
        out["new session"] = dict(calls)
        chat = a.chat()
        await chat.send("weather?")
    else:
        chat = await session_with_rule(a)
    calls.clear()
    res = await chat.send("weather?")
    assert res.text == "sunny" and res.finish_reason == "stop"
    out["next turn"] = dict(calls)
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        res = await chat.send("weather?")
        times.append(time.perf_counter_ns() - t0)
        assert res.text == "sunny"
    out["next turn median us"] = round(statistics.median(times) / 1000, 1)
    close = getattr(store, "close", None)
    if close is not None:
        close()
    return out


async def main(n: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("memory", "sqlite"):
            for how in ("allowed_tools", "static rule", "session rule"):
                rows.append(await measure(kind, how, n, tmp))
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="timed turns per row (default 200)")
    args = parser.parse_args()
    for row in asyncio.run(main(args.n)):
        print(json.dumps(row))
