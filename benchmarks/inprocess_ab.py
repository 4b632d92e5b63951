"""S1 and S3 in process, before / after: a change's effect on a turn, one process after the other.

``before`` is another tree of nb_agents (``git archive <commit> nb_agents | tar -x -C DIR``);
``after`` is this tree. Each pair runs a fresh process of each, alternated, and each process
times S1 and S3 as `peers/nb_agents/bench.py` defines them (a new chat on an in-memory store,
the scripted model), the second best of 7 rounds after a warm-up. On a shared machine the
minimum over the pairs is the figure to read, the median says how noisy it was::

    .venv/bin/python benchmarks/inprocess_ab.py --before /tmp/nb-before [--pairs 5]

Reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


async def _measure() -> dict[str, float]:
    """One process's S1 and S3 (microseconds a turn, a cycle)."""
    sys.path[:0] = [HERE, os.path.join(HERE, "peers", "nb_agents")]
    import bench
    import common

    import nb_agents as nba

    agent = bench.make_agent(nba.InMemorySessionStore())

    async def s1() -> None:
        await agent.chat().send(common.PROMPTS["S1"])

    async def s3() -> None:
        chat = agent.chat()
        res = await chat.send(common.PROMPTS["S3"])
        await chat.resume(restart=[res.interrupts[0].approve()])

    out = {}
    for name, once, n in (("S1", s1, 1000), ("S3", s3, 300)):
        for _ in range(200):
            await once()
        rounds = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(n):
                await once()
            rounds.append((time.perf_counter() - t0) / n * 1e6)
        out[name] = sorted(rounds)[1]
    return out


def _run(tree: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": tree}
    done = subprocess.run(
        [sys.executable, __file__, "--measure"], env=env, check=True, capture_output=True, text=True
    )
    out = json.loads(done.stdout)
    tree_of = out.pop("tree")
    if os.path.realpath(tree_of) != os.path.realpath(tree):
        raise SystemExit(f"measured the nb_agents of {tree_of}, not of {tree}")
    return dict(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a directory holding the before tree's nb_agents/")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.measure:
        import nb_agents

        out = asyncio.run(_measure())
        print(json.dumps({**out, "tree": os.path.dirname(os.path.dirname(nb_agents.__file__))}))
        return 0
    if not opts.before:
        parser.error("--before DIR is needed")
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for _ in range(opts.pairs):
        runs["before"].append(_run(opts.before))
        runs["after"].append(_run(ROOT))
    summary = {
        side: {
            name: {
                "min": round(min(r[name] for r in got), 1),
                "median": round(statistics.median(r[name] for r in got), 1),
            }
            for name in ("S1", "S3")
        }
        for side, got in runs.items()
    }
    for name in ("S1", "S3"):
        summary[f"after/before {name} (min)"] = round(
            summary["after"][name]["min"] / summary["before"][name]["min"], 3
        )
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
