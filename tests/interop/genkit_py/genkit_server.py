"""A Genkit Python 0.12 agent server (``genkit_fastapi.serve_agent``) for nb_agents to drive.

Runs in the interop virtualenv and never imports nb_agents. Usage:
``python genkit_server.py LEDGER`` binds 127.0.0.1 on a port the OS picks, prints
``PORT <n>`` and serves until killed.

``bankingAgent`` (server-managed, Genkit's ``InMemorySessionStore``) has an interrupt,
``userApproval`` (``define_interrupt``: answered with respond), and ``transferMoney``,
a tool that pauses until it is restarted with ``resumed: {"approved": true}``; each
transfer that runs appends a line to LEDGER. The model is registered in Genkit and
answers at once from rules: a user message mentioning a transfer asks for
``transferMoney``, one asking to confirm calls ``userApproval``, one saying "slowly"
never finishes (for detach and abort), anything else is echoed; after a tool it
reports the tool's output, streamed in two text chunks.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from typing import Any

import uvicorn
from fastapi import FastAPI
from genkit import ActionRunContext, Interrupt, ToolRunContext
from genkit.exp import Genkit, InMemorySessionStore
from genkit.model import ModelRequest, ModelResponse, ModelResponseChunk
from genkit_fastapi import serve_agent
from pydantic import BaseModel

LEDGER = sys.argv[1]
TRANSFER = {"amount": 500, "toAccount": "savings"}
QUESTION = {"question": "Close the old account?"}


class Question(BaseModel):
    question: str


class TransferInput(BaseModel):
    amount: float
    toAccount: str  # noqa: N815 - the wire name the model sends


class TransferOutput(BaseModel):
    success: bool
    transactionId: str | None = None  # noqa: N815


ai = Genkit()


def model_message(*parts: dict[str, Any]) -> ModelResponse:
    return ModelResponse.model_validate(
        {"message": {"role": "model", "content": list(parts)}, "finishReason": "stop"}
    )


def report(response: dict[str, Any]) -> str:
    output = response.get("output")
    if response.get("name") == "transferMoney":
        return (
            "Done: transaction txn-123." if output and output.get("success") else "The transfer was not made."
        )
    return f"You answered {json.dumps(output, sort_keys=True)}."


async def scripted(request: ModelRequest, ctx: ActionRunContext) -> ModelResponse:
    """A zero-latency scripted model: its answers follow from the last message."""
    last = request.messages[-1].model_dump(by_alias=True, exclude_none=True, mode="json")
    if last["role"] == "tool":
        text = " ".join(report(p["toolResponse"]) for p in last["content"] if "toolResponse" in p)
    else:
        said = "".join(p.get("text", "") for p in last["content"]).strip()
        if "transfer" in said.lower():
            return model_message({"toolRequest": {"name": "transferMoney", "ref": "t1", "input": TRANSFER}})
        if "confirm" in said.lower():
            return model_message({"toolRequest": {"name": "userApproval", "ref": "q1", "input": QUESTION}})
        if "slowly" in said.lower():
            await asyncio.Event().wait()  # until the turn is aborted
        text = f"You said: {said} ({len(request.messages)} messages so far)"
    head, sep, tail = text.partition(" ")
    for piece in [head + sep, tail]:
        ctx.send_chunk(ModelResponseChunk.model_validate({"role": "model", "content": [{"text": piece}]}))
    return model_message({"text": text})


ai.define_model(name="scripted", fn=scripted)

user_approval = ai.define_interrupt(
    name="userApproval", input_schema=Question, description="Ask the user to confirm."
)


@ai.tool(name="transferMoney")
async def transfer_money(inp: TransferInput, ctx: ToolRunContext) -> TransferOutput:
    """Transfer money to a specified account, pausing for user approval."""
    if not ctx.is_resumed():
        raise Interrupt({"details": f"Transfer ${inp.amount:.2f} to {inp.toAccount}"})
    if not (ctx.resumed_metadata or {}).get("approved"):
        return TransferOutput(success=False)
    with open(LEDGER, "a") as ledger:
        ledger.write(f"{inp.amount:.0f} {inp.toAccount}\n")
    return TransferOutput(success=True, transactionId="txn-123")


agent = ai.define_agent(
    name="bankingAgent",
    model="scripted",
    system="You are a banking assistant. Use transferMoney to move funds.",
    tools=[transfer_money, user_approval],
    store=InMemorySessionStore(),
)

app = FastAPI()
app.include_router(serve_agent(agent))


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections queue from now on, before uvicorn serves them
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
