"""A real uvicorn server on 127.0.0.1 in a thread, and the seed's banking agent to serve.

`LiveServer` binds its socket itself (the OS picks the port, so there is no race
for a free one); the `serve` fixture in conftest.py starts one per call.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn
from helpers import text_response, tool_call_response
from pydantic import BaseModel

import nb_agents as nba
from nb_agents.testing import ScriptedModel

START_TIMEOUT = 10.0


class LiveServer:
    """uvicorn serving `app` from a background thread."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(START_TIMEOUT)
        self.sock.close()


def wait_for(event: threading.Event, what: str, timeout: float = 10.0) -> None:
    """Block until `event` is set (a bound, not a timing assertion)."""
    if not event.wait(timeout):
        raise AssertionError(f"gave up waiting for {what}")


# -- the Go seed's banking agent -------------------------------------------------------------
class TransferInput(BaseModel):
    amount: float
    toAccount: str


class TransferOutput(BaseModel):
    success: bool
    transactionId: str | None = None


class ApprovalAsk(BaseModel):
    details: str


class ApprovalReply(BaseModel):
    approved: bool
    feedback: str | None = None


TRANSFER_CALL = ("transferMoney", "t1", {"amount": 500, "toAccount": "savings"})


def banking_agent(
    store: nba.SessionStore | None,
    *,
    state_secret: str | None = None,
    turns: int = 1,
    name: str = "bankingAgent",
    authorize: Any = None,
) -> tuple[nba.Agent, nba.Tool, list[TransferInput]]:
    """The seed's bankingAgent: `transferMoney` pauses for approval, then transfers.

    `turns` scripted conversations (a transfer request, then the confirmation).
    """
    executed: list[TransferInput] = []

    @nba.resumable_tool(name="transferMoney", resume=ApprovalReply)
    async def transfer_money(inp: TransferInput, reply: ApprovalReply | None) -> TransferOutput:
        """Transfer money to a specified account, pausing for user approval."""
        if reply is None:
            raise nba.Interrupt(ApprovalAsk(details=f"Transfer ${inp.amount:.2f} to {inp.toAccount}"))
        if not reply.approved:
            return TransferOutput(success=False)
        executed.append(inp)
        return TransferOutput(success=True, transactionId="txn-123")

    responses: list[dict[str, Any]] = []
    for _ in range(turns):
        responses += [tool_call_response(TRANSFER_CALL), text_response("Done: transaction txn-123.")]
    agent = nba.define_agent(
        name,
        model=ScriptedModel(
            responses,
            stream_chunks=[
                [],
                [
                    {"role": "model", "content": [{"text": "Done: "}]},
                    {"content": [{"text": "transaction txn-123."}]},
                ],
            ]
            * turns,
        ),
        system="You are a banking assistant. Use transferMoney to move funds.",
        tools=[transfer_money],
        store=store,
        state_secret=state_secret,
        authorize=authorize,
    )
    return agent, transfer_money, executed
