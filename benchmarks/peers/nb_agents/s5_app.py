"""The agent S5 serves over HTTP: S3's approval cycle, with a ledger of every transfer.

Served by the real command line, in its own process::

    NB_BENCH_LEDGER=/tmp/ledger.txt python -m nb_agents serve benchmarks/peers/nb_agents/s5_app.py:agent \\
        --host 127.0.0.1 --port 8765 --store sqlite:////tmp/s5.db

The model is a zero-latency `FunctionModel`: a user message ``transfer <cycle>``
is answered with a call of ``transfer`` carrying that cycle id; the tool's
answer is answered with the text ``done <cycle>``. ``transfer`` needs approval
(`ToolApproval`), so every cycle pauses once and runs the tool only when the
client approves. Each run of the tool appends one line to the ledger file named
by ``NB_BENCH_LEDGER``: the cycle id, the answer's idempotency key
(``ctx.idempotency_key``, the same for every attempt at one answer) and the
server's process id (``O_APPEND``, one ``write`` per line, so concurrent lines,
from several server processes too, never interleave). The harness reads the
ledger after the servers stop: one line per completed cycle, plus one per
explicit retry, means no tool ran twice. A fault cycle (its id starts with
``f``, see `s5_faults`) sleeps ``NB_BENCH_FAULT_TOOL_S`` seconds after its
line, so that a client's timeout or abort can land while the tool runs. With
``NB_BENCH_GC_STATS`` set, the server also records its garbage-collector pauses
(`GcStats`).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import time
from typing import Any

import nb_agents as nba
from nb_agents.testing import FunctionModel

TOOL = "transfer"
PREFIX = "transfer "
LEDGER_ENV = "NB_BENCH_LEDGER"
GC_ENV = "NB_BENCH_GC_STATS"
FAULT_PREFIX = "f"
FAULT_TOOL_S = float(os.environ.get("NB_BENCH_FAULT_TOOL_S", "0"))

_ledger_fd: list[int] = []


def _ledger(cycle: str, key: str) -> None:
    if not _ledger_fd:
        path = os.environ.get(LEDGER_ENV)
        if not path:
            raise RuntimeError(f"set {LEDGER_ENV} to the ledger file the transfer tool appends to")
        _ledger_fd.append(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))
    os.write(_ledger_fd[0], f"{cycle} {key or '-'} {os.getpid()}\n".encode())


def reply(req: nba.GenerateRequest) -> dict[str, Any] | str:
    """The scripted model: call ``transfer`` for a request, say ``done <cycle>`` after it ran."""
    last = req.messages[-1]
    if last.role == "tool":
        out = next(p.tool_response for p in last.content if p.tool_response is not None)
        return f"done {out.output}"
    text = last.text
    if not text.startswith(PREFIX):
        return f"unexpected message {text[:40]!r}"
    call = {"name": TOOL, "ref": "t1", "input": {"amount": 5, "cycle": text[len(PREFIX) :]}}
    return {"message": {"role": "model", "content": [{"toolRequest": call}]}, "finishReason": "stop"}


@nba.tool(name=TOOL)
async def transfer(amount: int, cycle: str, ctx: nba.ToolContext) -> str:
    """Move money (needs approval); records the cycle and the answer's idempotency key in the ledger."""
    _ledger(cycle, ctx.idempotency_key)
    if FAULT_TOOL_S and cycle.startswith(FAULT_PREFIX):
        await asyncio.sleep(FAULT_TOOL_S)
    return cycle


class GcStats:
    """Garbage-collector pauses of the server, by generation, flushed to a JSON file about once a second.

    Enabled by ``NB_BENCH_GC_STATS=<path>``; the harness reads the file after the server stops
    (a process ended by a signal runs no exit hook, hence the periodic flush).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.count = [0, 0, 0]
        self.total_ms = [0.0, 0.0, 0.0]
        self.max_ms = [0.0, 0.0, 0.0]
        self.started = 0.0
        self.flushed = time.monotonic()
        gc.callbacks.append(self.callback)

    def callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
            return
        gen, ms = int(info["generation"]), (time.perf_counter() - self.started) * 1000
        self.count[gen] += 1
        self.total_ms[gen] += ms
        self.max_ms[gen] = max(self.max_ms[gen], ms)
        if time.monotonic() - self.flushed > 1.0:
            self.flush()

    def flush(self) -> None:
        self.flushed = time.monotonic()
        data = {"collections": self.count, "total_ms": self.total_ms, "max_ms": self.max_ms}
        with open(self.path + ".tmp", "w") as fh:
            json.dump(data, fh)
        os.replace(self.path + ".tmp", self.path)


if os.environ.get(GC_ENV):
    GcStats(os.environ[GC_ENV])

agent = nba.define_agent(
    "bench",
    model=FunctionModel(reply),
    tools=[transfer],
    store=nba.InMemorySessionStore(),  # replaced by --store
    use=[nba.middleware.ToolApproval()],
)
