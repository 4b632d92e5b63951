"""Who builds what in one turn or cycle: pydantic and copy calls, and SQLite statements, by caller.

`loop_counts.py` counts a cycle's pydantic validations, model inits, copies and
serializations; this says which nb_agents function made each one, per turn or
cycle, so a cost found there has an owner:

* ``init <Model>``: a model's ``__init__`` (its validation is a ``validate_python``
  of the same caller), ``model_construct``, ``model_copy``, ``model_dump``;
* pydantic-core's ``validate_python``, ``to_python`` and ``to_json``;
* ``copy.copy`` and ``copy.deepcopy``, and sqlite3's ``execute`` (statements run on
  this thread; a write sent to a worker thread is not seen).

The caller is the innermost nb_agents frame on the stack (file, function, line).
Paths: ``s1`` and ``s3`` are `peers/nb_agents/bench.py`'s (in-memory store),
``server`` is `asgi_cycle.py`'s cycle through `nb-agents serve`'s app on SQLite
(JSON, or SSE with ``--sse``). Under ``sys.setprofile``, so timed nowhere; counts
are per turn (S1) or cycle, averaged over ``--cycles`` after a warm-up::

    .venv/bin/python benchmarks/pydantic_callers.py [s1|s3|server] [--sse] [--cycles 10]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "peers", "nb_agents")]

_C_CALLS = {"validate_python", "to_python", "to_json", "execute"}
_PY_CALLS = {"model_construct", "model_copy", "model_dump"}


class Callers:
    """A `sys.setprofile` hook counting the calls above by (what, nb_agents caller)."""

    def __init__(self) -> None:
        import nb_agents

        self.package = os.path.dirname(os.path.abspath(nb_agents.__file__)) + os.sep
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()

    def caller(self, frame: FrameType | None) -> str:
        while frame is not None:
            path = frame.f_code.co_filename
            if path.startswith(self.package):
                return f"{path[len(self.package) :]}:{frame.f_code.co_qualname}:{frame.f_lineno}"
            frame = frame.f_back
        return "(outside nb_agents)"

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            name = getattr(arg, "__name__", "")
            if name in _C_CALLS:
                self.counts[(name, self.caller(frame))] += 1
            return
        if event != "call":
            return
        code = frame.f_code
        if code.co_filename.endswith(os.path.join("pydantic", "main.py")):
            if code.co_name in _PY_CALLS:
                self.counts[(code.co_name, self.caller(frame.f_back))] += 1
            elif code.co_name == "__init__":
                model = type(frame.f_locals.get("self")).__name__
                self.counts[(f"init {model}", self.caller(frame.f_back))] += 1
        elif code.co_filename.endswith(os.path.join("", "copy.py")) and code.co_name in ("copy", "deepcopy"):
            self.counts[(f"copy.{code.co_name}", self.caller(frame.f_back))] += 1


async def _path(name: str, sse: bool, work: str) -> Callable[[int], Awaitable[None]]:
    """One turn (S1) or cycle of `name`, by number."""
    if name == "server":
        import asgi_cycle

        app = asgi_cycle.build(work)
        return lambda n: asgi_cycle.cycle(app, n, sse)
    import bench
    import common

    import nb_agents as nba

    agent = bench.make_agent(nba.InMemorySessionStore())

    async def s1(n: int) -> None:
        await agent.chat().send(common.PROMPTS["S1"])

    async def s3(n: int) -> None:
        chat = agent.chat()
        res = await chat.send(common.PROMPTS["S3"])
        await chat.resume(restart=[res.interrupts[0].approve()])

    return s1 if name == "s1" else s3


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default="server", choices=["s1", "s3", "server"])
    parser.add_argument("--sse", action="store_true", help="the server path streams (SSE)")
    parser.add_argument("--cycles", type=int, default=10)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pydantic-callers-") as work:
        once = await _path(opts.path, opts.sse, work)
        for n in range(50):
            await once(-n - 1)
        hook = Callers()
        sys.setprofile(hook)
        try:
            for n in range(opts.cycles):
                await once(n)
        finally:
            sys.setprofile(None)
    for (what, where), count in sorted(hook.counts.items(), key=lambda kv: (kv[0][0], -kv[1])):
        print(f"{count / opts.cycles:6.1f}  {what:28s} {where}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
