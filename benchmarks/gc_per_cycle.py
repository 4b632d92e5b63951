"""What an approval cycle leaves to Python's cycle collector, and what the collector costs it.

An object that refcounting cannot free (it is in a reference cycle, or hangs
off one) waits for the cycle collector; a cycle that leaves such objects
behind also sets off collections (they count towards the young generation's
threshold), and each collection walks what is young and alive. This reports,
for one approval cycle (a message whose turn pauses, then its approval):

* the cyclic garbage it leaves: objects found by a collection with the
  collector otherwise off (``gc.DEBUG_SAVEALL``), per cycle, by type;
* the collector's time per cycle with it on (``gc.callbacks``), by generation.

Two paths: ``inprocess`` is S3 of `peers/nb_agents/bench.py` (a new chat per
cycle, the in-memory store), ``server`` is `asgi_cycle.py`'s cycle through
`nb-agents serve`'s app on SQLite (JSON, or SSE with ``--sse``). ``--tree DIR``
measures another tree's nb_agents (``git archive <commit> nb_agents | tar -x -C
DIR``), for before/after. Numbers are reported, never asserted::

    .venv/bin/python benchmarks/gc_per_cycle.py [inprocess|server] [--sse] [--cycles 3000] [--tree DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def _kind(obj: object) -> str:
    name = type(obj).__qualname__
    code = getattr(obj, "__code__", None)
    if code is not None:
        name += f" {code.co_qualname}"
    func = getattr(obj, "__func__", None)
    if func is not None:
        name += f" {func.__qualname__}"
    return name


async def measure(once: Callable[[], Awaitable[None]], cycles: int) -> dict[str, Any]:
    for _ in range(300):  # warm-up: first-use imports, caches, the store's schema
        await once()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        few = min(cycles, 200)
        for _ in range(few):
            await once()
        gc.collect()
        kinds = collections.Counter(_kind(o) for o in gc.garbage)
        garbage = len(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    gc.collect()
    spent: dict[int, float] = collections.defaultdict(float)
    runs: collections.Counter[int] = collections.Counter()
    began = [0.0]

    def timing(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            spent[info["generation"]] += time.perf_counter() - began[0]
            runs[info["generation"]] += 1

    gc.callbacks.append(timing)
    try:
        cpu = time.process_time()
        for _ in range(cycles):
            await once()
        cpu = time.process_time() - cpu
    finally:
        gc.callbacks.remove(timing)
    return {
        "cyclic_garbage_per_cycle": round(garbage / few, 2),
        "garbage_kinds_per_cycle": {k: round(v / few, 2) for k, v in kinds.most_common(12)},
        "cpu_us_per_cycle": round(cpu / cycles * 1e6, 1),
        "gc_us_per_cycle": round(sum(spent.values()) / cycles * 1e6, 1),
        "collections_per_cycle": {f"gen{g}": round(runs[g] / cycles, 4) for g in sorted(runs)},
    }


def inprocess() -> Callable[[], Awaitable[None]]:
    import bench  # peers/nb_agents/bench.py: the S3 agent

    import nb_agents as nba

    agent = bench.make_agent(nba.InMemorySessionStore())

    async def once() -> None:
        chat = agent.chat()
        res = await chat.send("transfer")
        await chat.resume(restart=[res.interrupts[0].approve()])

    return once


async def run(path: str, sse: bool, cycles: int) -> dict[str, Any]:
    if path == "inprocess":
        return await measure(inprocess(), cycles)
    import asgi_cycle

    with tempfile.TemporaryDirectory(prefix="gc-cycle-") as work:
        app = asgi_cycle.build(work)
        n = [0]

        async def once() -> None:
            n[0] += 1
            await asgi_cycle.cycle(app, n[0], sse)

        return await measure(once, cycles)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", choices=["inprocess", "server"], default="inprocess")
    parser.add_argument("--sse", action="store_true", help="the server cycle over SSE (default JSON)")
    parser.add_argument("--cycles", type=int, default=3000)
    parser.add_argument("--tree", help="a directory holding another tree's nb_agents/ to measure instead")
    opts = parser.parse_args()
    if opts.tree:
        sys.path.insert(0, opts.tree)
    sys.path[:0] = [HERE, os.path.join(HERE, "peers", "nb_agents")]
    import json

    import nb_agents

    out = asyncio.run(run(opts.path, opts.sse, opts.cycles))
    out = {"tree": os.path.dirname(os.path.dirname(nb_agents.__file__)), "path": opts.path, **out}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
