"""Where an in-process turn's time goes, layer by layer, by taking layers away (issue 23).

Each line times one way of running the same single turn (the offline
`FunctionModel` replies "hi"), a fresh chat each time, best of ``--rounds``
rounds of ``--turns`` turns, in microseconds a turn:

* ``model call``: `FunctionModel.generate` alone, the least a turn does;
* ``agent.invoke``: the engine (invocation, turn steps, prompt loop, output),
  no chat facade, no store;
* ``chat.send``: the same through `Chat` (input checked at the edge, the
  response built): the facade's share is this minus the line above;
* ``S1 without a store``: S1's agent (`peers/nb_agents/bench.py`: two tools,
  `ToolApproval`) with no store;
* ``S1, store saves nothing`` / ``S1, store only runs the mutator``: S1's
  agent on an `InMemorySessionStore` whose ``save_snapshot`` is replaced, so
  the engine's own work for a store (ids, the row, the audit check) shows
  apart from the store's;
* ``S1``: as `make bench` runs it (its harness adds its own checks).

One process, in order, so the ratios between lines are what to read; the
absolute numbers move with the machine. Reported, never asserted::

    .venv/bin/python benchmarks/turn_layers.py [--turns 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "peers", "nb_agents")]

import bench  # noqa: E402  (peers/nb_agents/bench.py: S1's agent)
import common  # noqa: E402

import nb_agents as nba  # noqa: E402
from nb_agents.testing import FunctionModel  # noqa: E402
from nb_agents.types import AgentInit, AgentInput, GenerateRequest, Message  # noqa: E402


async def best(once: Callable[[], Awaitable[Any]], turns: int, rounds: int) -> float:
    """Microseconds a call of `once`: the best round's mean, after a warm-up."""
    for _ in range(300):
        await once()
    fastest = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(turns):
            await once()
        fastest = min(fastest, (time.perf_counter() - t0) / turns * 1e6)
    return fastest


def _with_save(store: nba.InMemorySessionStore, run_mutator: bool) -> nba.InMemorySessionStore:
    async def save_snapshot(snapshot_id: str, mutator: Any, **_: Any) -> Any:
        return mutator(None) if run_mutator else None

    store.save_snapshot = save_snapshot  # type: ignore[method-assign]
    return store


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    bare = nba.define_agent("bare", model=FunctionModel(lambda req: "hi"))
    model = FunctionModel(lambda req: "hi")
    inp = AgentInput(message=Message.model_validate({"role": "user", "content": [{"text": "hi"}]}))
    request = GenerateRequest.model_construct(
        messages=[inp.message], config=None, tools=[], tool_choice=None, output=None
    )

    def send(agent: nba.Agent) -> Callable[[], Awaitable[Any]]:
        async def once() -> Any:
            return (await agent.chat().send(common.PROMPTS["S1"])).text

        return once

    async def generate() -> Any:
        return await model.generate(request, None)

    async def invoke() -> Any:
        return await bare.invoke(inp, AgentInit())

    no_store = cast("nba.SessionStore", None)  # S1's agent takes a store; None runs it without
    saves_nothing = _with_save(nba.InMemorySessionStore(), False)
    only_mutator = _with_save(nba.InMemorySessionStore(), True)
    lines: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("model call", generate),
        ("agent.invoke (engine, no store)", invoke),
        ("chat.send (engine and facade, no store)", send(bare)),
        ("S1 without a store", send(bench.make_agent(no_store))),
        ("S1, store saves nothing", send(bench.make_agent(saves_nothing))),
        ("S1, store only runs the mutator", send(bench.make_agent(only_mutator))),
        ("S1", send(bench.make_agent(nba.InMemorySessionStore()))),
    ]
    for name, once in lines:
        print(f"{await best(once, args.turns, args.rounds):8.1f} us  {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
