"""Memory an in-memory store holds per approval cycle, before and after `nb-agents serve` bounds it.

Each cycle is what a server's client does: a new session whose turn pauses for
approval, then the approval, which runs the tool (the S3 cycle, with a
zero-latency `FunctionModel`). The agent is defined on ``InMemorySessionStore()``
as a demo module would define it, and is run two ways:

* ``before``: as `nb-agents serve` ran it until issue 21, the store unbounded;
* ``after``: after ``build_app`` (what `nb-agents serve` runs) bounded it with the
  serve defaults, ``--max-sessions 10000 --session-ttl 86400``.

The memory Python holds (``tracemalloc``, after a full collection, every
``--every`` cycles) is reported per cycle over the first ``--max-sessions``
cycles and over the cycles beyond them, with the sessions the store holds.
Numbers are reported, never asserted.

Usage::

    .venv/bin/python benchmarks/memory_per_cycle.py [--cycles 25000] [--every 2500]
        [--out benchmarks/results/issue21/memory_per_cycle.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import subprocess
import sys
import time
import tracemalloc
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import nb_agents as nba  # noqa: E402
from nb_agents._engine.heartbeat import _BACKGROUND  # noqa: E402
from nb_agents.server.cli import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_TTL, build_app  # noqa: E402
from nb_agents.testing import FunctionModel  # noqa: E402


def approval_agent() -> nba.Agent:
    def model(req: nba.GenerateRequest) -> dict[str, Any] | str:
        if req.messages[-1].role == "tool":
            return "done"
        call = {"toolRequest": {"name": "transfer", "ref": f"t{len(req.messages)}", "input": {"amount": 5}}}
        return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}

    @nba.tool(name="transfer")
    async def transfer(amount: int) -> str:
        return "ok"

    return nba.define_agent(
        "bank",
        model=FunctionModel(model),
        tools=[transfer],
        store=nba.InMemorySessionStore(),
        use=[nba.middleware.ToolApproval()],
    )


async def settled() -> int:
    """The traced memory once the background tasks of finished turns ended, after a full collection."""
    for _ in range(200):
        if not _BACKGROUND:
            break
        await asyncio.sleep(0.01)
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def run(label: str, cycles: int, every: int) -> dict[str, Any]:
    agent = approval_agent()
    if label == "after":
        build_app(agent)  # what `nb-agents serve` does to the agent's unbounded store
    store = agent.store
    assert isinstance(store, nba.InMemorySessionStore)
    gc.collect()
    tracemalloc.start()
    points: list[dict[str, int]] = [{"cycle": 0, "traced": await settled(), "sessions": 0}]
    started = time.perf_counter()
    for cycle in range(1, cycles + 1):
        res = await agent.chat().send("transfer")
        res = await agent.chat(snapshot_id=res.snapshot_id).resume(restart=[res.interrupts[0].approve()])
        assert res.text == "done"
        if cycle % every == 0:
            sessions = len(await store.session_ids())
            points.append({"cycle": cycle, "traced": await settled(), "sessions": sessions})
            print(f"{label}: {cycle} cycles, {points[-1]['traced'] / 1e6:.1f} MB, {sessions} sessions")
    seconds = time.perf_counter() - started
    tracemalloc.stop()
    bound = DEFAULT_MAX_SESSIONS

    def per_cycle(lo: int, hi: int) -> float | None:
        a = next((p for p in points if p["cycle"] >= lo), None)
        b = next((p for p in reversed(points) if p["cycle"] <= hi), None)
        if a is None or b is None or b["cycle"] <= a["cycle"]:
            return None
        return (b["traced"] - a["traced"]) / (b["cycle"] - a["cycle"])

    return {
        "store": repr(store),
        "cycles": cycles,
        "seconds_traced": round(seconds, 1),
        "bytes_per_cycle_first": per_cycle(0, bound),
        "bytes_per_cycle_beyond_bound": per_cycle(bound + every, cycles),
        "sessions_held": points[-1]["sessions"],
        "points": points,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=25_000)
    parser.add_argument("--every", type=int, default=2_500)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "issue21", "memory_per_cycle.json"))
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE, check=False
    ).stdout.strip()
    report: dict[str, Any] = {
        "what": "traced Python memory per S3 approval cycle (a new session each), in-memory store",
        "serve_defaults": {"max_sessions": DEFAULT_MAX_SESSIONS, "session_ttl": DEFAULT_SESSION_TTL},
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "commit": commit,
        "command": "python benchmarks/memory_per_cycle.py " + " ".join(sys.argv[1:]),
    }
    for label in ("before", "after"):
        report[label] = asyncio.run(run(label, args.cycles, args.every))
        gc.collect()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    for label in ("before", "after"):
        r = report[label]
        first, beyond = r["bytes_per_cycle_first"], r["bytes_per_cycle_beyond_bound"]
        print(
            f"{label}: {first or 0:.0f} B/cycle for the first {DEFAULT_MAX_SESSIONS} cycles, "
            f"{beyond or 0:.0f} B/cycle beyond; {r['sessions_held']} sessions held after {r['cycles']}"
        )


if __name__ == "__main__":
    main()
