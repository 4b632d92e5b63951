"""Genkit Python's agent server for S5's floor suite: S3's agent over HTTP, with a ledger.

Runs in the genkit peer's virtualenv (``benchmarks/.venvs/genkit``), never
imports nb_agents; `s5_server.Server` starts it::

    NB_BENCH_LEDGER=/tmp/ledger.txt benchmarks/.venvs/genkit/bin/python \\
        benchmarks/peers/genkit/s5_server.py --port 8765

``genkit_fastapi.serve_agent`` serves the agent ``bench`` (Genkit's
``InMemorySessionStore``: Genkit Python ships no SQLite or PostgreSQL store)
under FastAPI and uvicorn with h11 and the asyncio loop, as ``nb-agents
serve`` runs here (uvloop, which this virtualenv holds, is not used). The model
answers ``transfer <cycle>`` with a call of ``transfer`` carrying the cycle id,
and the tool's answer with ``done <cycle>``, as `peers/nb_agents/s5_app.py`'s
does. Genkit Python 0.12 ships no ToolApproval middleware, so ``transfer``
raises ``Interrupt`` until it is restarted with ``resumed.toolApproved``, as
its interrupts guide shows. Each run appends ``<cycle> g-<cycle> <pid>`` to
the ledger (Genkit has no idempotency key: the cycle id stands in for it).
"""

from __future__ import annotations

import argparse
import os

import uvicorn
from fastapi import FastAPI
from genkit import ActionRunContext, Interrupt, ModelRequest, ModelResponse, ToolRunContext
from genkit.exp import Genkit, InMemorySessionStore
from genkit_fastapi import serve_agent
from pydantic import BaseModel

PREFIX = "transfer "
_ledger: list[int] = []

ai = Genkit()


def _line(cycle: str) -> None:
    if not _ledger:
        _ledger.append(os.open(os.environ["NB_BENCH_LEDGER"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))
    os.write(_ledger[0], f"{cycle} g-{cycle} {os.getpid()}\n".encode())


def _message(*parts: dict[str, object]) -> ModelResponse:
    return ModelResponse.model_validate(
        {"message": {"role": "model", "content": list(parts)}, "finishReason": "stop"}
    )


async def scripted(req: ModelRequest, ctx: ActionRunContext) -> ModelResponse:
    """Call ``transfer`` for ``transfer <cycle>``; say ``done <cycle>`` after it ran."""
    last = req.messages[-1].model_dump(by_alias=True, exclude_none=True, mode="json")
    if last["role"] == "tool":
        out = next(p["toolResponse"]["output"] for p in last["content"] if "toolResponse" in p)
        return _message({"text": f"done {out}"})
    text = "".join(p.get("text", "") for p in last["content"])
    if not text.startswith(PREFIX):
        return _message({"text": f"unexpected message {text[:40]!r}"})
    call = {"name": "transfer", "ref": "t1", "input": {"amount": 5, "cycle": text[len(PREFIX) :]}}
    return _message({"toolRequest": call})


ai.define_model(name="scripted", fn=scripted)


class TransferIn(BaseModel):
    amount: int
    cycle: str


@ai.tool(name="transfer")
async def transfer(inp: TransferIn, ctx: ToolRunContext) -> str:
    """Move money (needs approval)."""
    if not (ctx.resumed_metadata or {}).get("toolApproved"):
        raise Interrupt({"message": "Tool not in approved list: transfer"})
    _line(inp.cycle)
    return inp.cycle


agent = ai.define_agent(name="bench", model="scripted", tools=[transfer], store=InMemorySessionStore())
app = FastAPI()
app.include_router(serve_agent(agent))


def main() -> None:
    ap = argparse.ArgumentParser(description="Genkit's agent server for S5")
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", loop="asyncio", http="h11")


if __name__ == "__main__":
    main()
