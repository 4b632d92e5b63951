"""The nb_agents server that Genkit's own clients drive (JS and Python).

`serve_bank(tmp_path)` starts a real uvicorn on 127.0.0.1 (a free port) serving:

* ``bankingAgent``: the seed's banking agent, server-managed on a `SqliteSessionStore`:
  ``transferMoney`` pauses for approval (restart with ``metadata.resumed`` to run it)
  and ``userApproval`` is a `define_interrupt` (answered with respond);
* ``signedBank``: the same agent with client-managed state signed by ``state_secret``;
* ``plainBank``: the same agent, client-managed and unsigned;
* ``blocker``: a custom agent with a store that streams one chunk, then waits until
  it is aborted (for detach-then-abort and a client closing its stream);
* ``failing``: a custom agent that streams three chunks, then its store fails the
  turn's write (`BrokenStore`): a thrown ``UNAVAILABLE`` error after the chunks;
* ``refusing``: the same, on a store that refuses only the turn's final row and
  takes the failed row written in its place (`RefusingStore`): the same error.

The model is rule-based and answers at once: a user message that mentions a
transfer asks for ``transferMoney``, one that asks to confirm calls
``userApproval``, anything else is echoed with the history length; after a tool
it reports the tool's output, streamed in two text chunks. Every request body is
recorded (`Recorder`), so a test can check what a client really sent.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from server.live import ApprovalAsk, ApprovalReply, LiveServer, TransferInput, TransferOutput

import nb_agents as nba
from nb_agents.errors import UnavailableError
from nb_agents.models.base import ModelChunkSink
from nb_agents.server import create_app

SECRET = "interop-state-secret"
TRANSFER = {"amount": 500, "toAccount": "savings"}
QUESTION = {"question": "Close the old account?"}
DONE = "Done: transaction txn-123."


class Question(BaseModel):
    question: str


class Confirmation(BaseModel):
    approved: bool
    note: str | None = None


def _model_message(*parts: dict[str, Any]) -> nba.GenerateResponse:
    return nba.GenerateResponse.model_validate(
        {"message": {"role": "model", "content": list(parts)}, "finishReason": "stop"}
    )


class BankModel:
    """A zero-latency rule-based model that streams its text answers in two chunks."""

    name = "interop-bank"

    async def generate(
        self, request: nba.GenerateRequest, on_chunk: ModelChunkSink | None = None
    ) -> nba.GenerateResponse:
        last = request.messages[-1]
        if last.role == "tool":
            text = " ".join(self._report(p.tool_response) for p in last.content if p.tool_response)
        else:
            said = last.text.strip()
            if "transfer" in said.lower():
                return _model_message(
                    {"toolRequest": {"name": "transferMoney", "ref": "t1", "input": TRANSFER}}
                )
            if "confirm" in said.lower():
                return _model_message(
                    {"toolRequest": {"name": "userApproval", "ref": "q1", "input": QUESTION}}
                )
            text = f"You said: {said} ({len(request.messages)} messages so far)"
        if on_chunk is not None:
            head, sep, tail = text.partition(" ")
            for piece in [head + sep, tail]:
                await on_chunk(
                    nba.ModelResponseChunk.model_validate({"role": "model", "content": [{"text": piece}]})
                )
        return _model_message({"text": text})

    @staticmethod
    def _report(response: Any) -> str:
        if response.name == "transferMoney":
            return DONE if response.output.get("success") else "The transfer was not made."
        return f"You answered {json.dumps(response.output, sort_keys=True)}."


@dataclass
class Bank:
    """The running server and what its agents did."""

    url: str
    executed: list[TransferInput] = field(default_factory=list)
    blocker_stopped: list[str] = field(default_factory=list)
    requests: list[tuple[str, Any]] = field(default_factory=list)

    def wait_blocker_stopped(self, count: int, timeout: float = 10.0) -> None:
        """Wait (bounded) until `count` blocker turns were stopped on the server."""
        deadline = time.monotonic() + timeout
        while len(self.blocker_stopped) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"only {self.blocker_stopped} blocker turns stopped; expected {count}")
            time.sleep(0.02)

    def bodies(self, path: str) -> list[Any]:
        """The JSON bodies POSTed to `path` (e.g. ``/signedBank``), in order."""
        return [body for p, body in self.requests if p == path]


def bank_agents(db: Path, bank: Bank) -> list[nba.Agent]:
    @nba.resumable_tool(name="transferMoney", resume=ApprovalReply)
    async def transfer_money(inp: TransferInput, reply: ApprovalReply | None) -> TransferOutput:
        """Transfer money to a specified account, pausing for user approval."""
        if reply is None:
            raise nba.Interrupt(ApprovalAsk(details=f"Transfer ${inp.amount:.2f} to {inp.toAccount}"))
        if not reply.approved:
            return TransferOutput(success=False)
        bank.executed.append(inp)
        return TransferOutput(success=True, transactionId="txn-123")

    user_approval = nba.define_interrupt(
        name="userApproval",
        description="Ask the user to confirm.",
        input_schema=Question,
        output_schema=Confirmation,
    )

    def banking(name: str, **kwargs: Any) -> nba.Agent:
        return nba.define_agent(
            name,
            model=BankModel(),
            system="You are a banking assistant. Use transferMoney to move funds.",
            tools=[transfer_money, user_approval],
            **kwargs,
        )

    async def block(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        await ctx.send_chunk({"role": "model", "content": [{"text": "working"}]})
        try:
            await ctx.abort_signal.wait()
        finally:  # an abort cancels the turn's task (or sets the signal first)
            bank.blocker_stopped.append(inp.message.text if inp.message else "")
        return "unreachable"

    async def stream_then_fail(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        for piece in ["one ", "two ", "three"]:
            await asyncio.sleep(0.005)  # each chunk is written as it comes, as a model streams
            await ctx.send_chunk({"role": "model", "content": [{"text": piece}]})
        return "one two three"  # the last chunk and the failed write come back to back

    return [
        banking("bankingAgent", store=nba.SqliteSessionStore(db)),
        banking("signedBank", state_secret=SECRET),
        banking("plainBank"),
        nba.define_custom_agent("blocker", block, store=nba.InMemorySessionStore()),
        nba.define_custom_agent("failing", stream_then_fail, store=BrokenStore()),
        nba.define_custom_agent("refusing", stream_then_fail, store=RefusingStore()),
    ]


class BrokenStore(nba.InMemorySessionStore):
    """A store whose every write fails: the turn's chunks go out, then its snapshot cannot be written."""

    async def save_snapshot(self, snapshot_id: str, mutator: Any, **kwargs: Any) -> Any:
        raise UnavailableError("the session store is down")


class RefusingStore(nba.InMemorySessionStore):
    """A store that refuses every completed row (in its transaction) and takes any other."""

    async def save_snapshot(self, snapshot_id: str, mutator: Any, **kwargs: Any) -> Any:
        def refusing(current: nba.SessionSnapshot | None) -> Any:
            new = mutator(current)
            if new is not None and new.status == "completed":
                raise UnavailableError("the session store is down")
            return new

        return await super().save_snapshot(snapshot_id, refusing, **kwargs)


ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]


class Recorder:
    """ASGI middleware keeping the JSON body of every POST (what a client really sent)."""

    def __init__(self, app: ASGIApp, log: list[tuple[str, Any]]) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        done = False

        async def recording() -> Any:
            nonlocal done
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False) and not done:
                    done = True
                    try:
                        body = json.loads(b"".join(chunks))
                    except ValueError:
                        body = None
                    self.log.append((scope["path"], body))
            return message

        await self.app(scope, recording, send)


def serve_bank(tmp_path: Path) -> tuple[Bank, LiveServer]:
    """Start the server; the caller stops it (``server.stop()``)."""
    bank = Bank(url="")
    app = create_app(bank_agents(tmp_path / "bank.db", bank))
    server = LiveServer(Recorder(app, bank.requests))
    server.start()
    bank.url = server.url
    return bank, server
