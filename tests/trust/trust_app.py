"""The agent the trust tests attack, in-process and under a real `nb-agents serve`.

The model is told what to do by the user's message, a JSON directive:
``{"calls": [{"name", "ref", "input", "metadata"?}]}`` makes it call those tools
(with whatever metadata the attack puts on the calls: a prompt-injected model
writes what it likes); after a tool round it says ``done``. Its tools write a
line to a real ledger file *before* anything else, so the ledger says exactly
what ran:

* ``transfer(amount, to, slow=False)``: held by `ToolApproval` (no allowlist);
  a deny rule refuses amounts over 1000; with ``slow`` it waits after its line
  until the turn is aborted (or 30 s);
* ``payInvoice(invoice)``: allowlisted; it asks its own question (a resumable
  tool) and pays only on ``{"approved": true}``.

The nested route (`make_nested`): the attacked agent is the sub-agent of
``boss``, whose model hands it the user's message as its task, so the same
directives reach it through another model, and every answer comes from the top.

Under ``nb-agents serve trust_app:served``, ``NBA_TRUST_LEDGER`` names the ledger,
``NBA_TRUST_DB`` the SQLite file (or a PostgreSQL DSN) and ``NBA_TRUST_EXPIRES``
the seconds a hold waits (its default then approves); ``NBA_TRUST_NESTED`` serves
``boss`` (the attacked agent as its sub-agent) instead.
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from directives import directed_calls, directive, read_ledger, write_ledger
from directives import transfer_call as call
from pydantic import BaseModel

import nb_agents as nba
from nb_agents.middleware import ToolApproval
from nb_agents.testing import FunctionModel

__all__ = ["PayReply", "call", "directive", "make_agent", "make_nested", "read_ledger", "served"]

LIMIT = 1000


def _model(req: nba.GenerateRequest) -> dict[str, Any] | str:
    last = req.messages[-1]
    if last.role != "user":
        return "done"
    return directed_calls(last.text) or "I only follow directives"


class PayReply(BaseModel):
    approved: bool


def make_agent(
    store: nba.SessionStore | None,
    ledger: Path,
    *,
    name: str = "trust",
    expires_in: float | None = None,
    on_pause: Any = None,
) -> nba.Agent:
    """The attacked agent, on `store`, writing what runs to `ledger`."""

    @nba.tool(name="transfer")
    async def transfer(amount: int, to: str, ctx: nba.ToolContext, slow: bool = False) -> str:
        """Move money."""
        inp: dict[str, Any] = {"amount": amount, "to": to}
        if slow:
            inp["slow"] = True
        write_ledger(ledger, ctx, inp)
        if slow:
            await asyncio.sleep(30)  # until the turn is aborted
        return f"sent {amount} to {to}"

    class Invoice(BaseModel):
        invoice: str

    @nba.resumable_tool(name="payInvoice", resume=PayReply)
    async def pay_invoice(inp: Invoice, reply: PayReply | None, ctx: nba.ToolContext) -> str:
        """Pay an invoice, after asking."""
        if reply is None:
            raise nba.Interrupt({"question": f"Pay invoice {inp.invoice}?"})
        if not reply.approved:
            return "not paid"
        write_ledger(ledger, ctx, inp.model_dump())
        return f"paid {inp.invoice}"

    gate = ToolApproval(
        allowed_tools=["payInvoice"],
        rules=[nba.ApprovalRule("transfer", when=lambda i: i.get("amount", 0) > LIMIT, action="deny")],
        expires_in=timedelta(seconds=expires_in) if expires_in is not None else None,
        on_expiry=nba.Expiry.approve() if expires_in is not None else None,
    )
    return nba.define_agent(
        name,
        model=FunctionModel(_model),
        tools=[transfer, pay_invoice],
        store=store,
        use=[gate],
        on_pause=on_pause,
    )


def _hand_down(req: nba.GenerateRequest) -> dict[str, Any] | str:
    """The parent's model: the user's message becomes the sub-agent's task, whatever it says."""
    last = req.messages[-1]
    if last.role != "user":
        return "done"
    call = {"toolRequest": {"name": "trust", "ref": "sub", "input": {"task": last.text}}}
    return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}


def make_nested(store: nba.SessionStore | None, ledger: Path, **options: Any) -> nba.Agent:
    """``boss``: the attacked agent (`make_agent`, on the same store) as its one sub-agent."""
    inner = make_agent(store, ledger, **options)
    return nba.define_agent("boss", model=FunctionModel(_hand_down), tools=[inner.as_tool()], store=store)


def _served() -> nba.Agent:
    db = os.environ.get("NBA_TRUST_DB", "")
    store: nba.SessionStore
    if "dbname=" in db or db.startswith("postgres"):
        from nb_agents.stores.postgres import PostgresSessionStore

        store = PostgresSessionStore(db)
    else:
        store = nba.SqliteSessionStore(db or "trust.db")
    expires = os.environ.get("NBA_TRUST_EXPIRES")
    build = make_nested if os.environ.get("NBA_TRUST_NESTED") else make_agent
    return build(
        store,
        Path(os.environ.get("NBA_TRUST_LEDGER", os.devnull)),
        expires_in=float(expires) if expires else None,
    )


served = _served() if "NBA_TRUST_LEDGER" in os.environ else None
