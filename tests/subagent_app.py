"""Agents that use agents: the sub-agent tests' app, in-process and in helper processes.

Every model here follows directives: a user message that is JSON
``{"calls": [{"name", "ref", "input", "metadata"?}]}`` makes it call those tools
(with whatever metadata a prompt-injected model writes); after a tool round it
says ``done: <outputs>``. So the parent's model hands its sub-agent a task that
is itself a directive, and the sub-agent's model follows it: the text a model
passes down is as untrusted as a model's own calls.

* ``worker``: ``transfer(amount, to)`` is held by its `ToolApproval` (a deny rule
  refuses amounts over 1000; ``lookup`` is allowlisted); each run writes a line to
  the ledger first, so the ledger says what ran;
* ``manager``: ``worker`` as a tool (a middle level, ungated);
* ``lead``: ``worker`` (one level) and ``manager`` (two levels) as tools.

Run as a script (``python subagent_app.py <db> <ledger> <command>``) it is
another process on the same SQLite file: ``pending`` prints the nested pauses
``pending()`` finds, ``approve`` answers every one of them at the top and
prints the finish reason.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from directives import directed_calls, directive, transfer_call, write_ledger

import nb_agents as nba
from nb_agents.middleware import ToolApproval
from nb_agents.testing import FunctionModel

LIMIT = 1000


def ask(
    agent: str, ref: str, *calls: dict[str, Any], metadata: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A call of the sub-agent tool `agent` whose task makes the sub-agent call `calls`."""
    found: dict[str, Any] = {"name": agent, "ref": ref, "input": {"task": directive(*calls)}}
    if metadata is not None:
        found["metadata"] = metadata
    return found


def follow(req: nba.GenerateRequest) -> dict[str, Any] | str:
    """The directive-following model."""
    last = req.messages[-1]
    if last.role == "tool":
        outs = [p.tool_response.output for p in last.content if p.tool_response is not None]
        return "done: " + json.dumps(outs)
    return directed_calls(last.text) or f"I only follow directives, not {last.text!r}"


def make_worker(store: nba.SessionStore | None, ledger: Path, *, name: str = "worker") -> nba.Agent:
    @nba.tool(name="transfer")
    async def transfer(amount: int, to: str, ctx: nba.ToolContext) -> str:
        """Move money."""
        write_ledger(ledger, ctx, {"amount": amount, "to": to})
        return f"sent {amount} to {to}"

    @nba.tool(name="lookup")
    async def lookup(key: str) -> str:
        """Look a fact up."""
        return f"fact about {key}"

    gate = ToolApproval(
        allowed_tools=["lookup"],
        rules=[nba.ApprovalRule("transfer", when=lambda i: i.get("amount", 0) > LIMIT, action="deny")],
    )
    return nba.define_agent(
        name,
        model=FunctionModel(follow),
        tools=[transfer, lookup],
        store=store,
        use=[gate],
        description="Moves money and looks facts up.",
    )


def make_agents(
    store: nba.SessionStore | None, ledger: Path, *, gate_lead: bool = False
) -> tuple[nba.Agent, nba.Agent, nba.Agent]:
    """(lead, manager, worker), all on `store`."""
    worker = make_worker(store, ledger)
    manager = nba.define_agent(
        "manager",
        model=FunctionModel(follow),
        tools=[worker.as_tool()],
        store=store,
        description="Delegates.",
    )
    use = [ToolApproval(allowed_tools=[])] if gate_lead else []
    lead = nba.define_agent(
        "lead",
        model=FunctionModel(follow),
        tools=[worker.as_tool(description="Ask the worker."), manager.as_tool()],
        store=store,
        use=use,
    )
    return lead, manager, worker


def main(db: str, ledger: str, command: str, *rest: str) -> None:
    lead, _, _ = make_agents(nba.SqliteSessionStore(db), Path(ledger))
    if command == "pause":  # two levels: lead -> manager -> worker, which asks about two transfers
        wanted = directive(
            ask("manager", "m1", ask("worker", "w1", transfer_call("t1", 5), transfer_call("t2", 7)))
        )
        res = lead.chat().send_sync(wanted)
        print(res.finish_reason, res.session_id)
        return
    turns = lead.pending_sync()
    if command == "pending":
        for turn in turns:
            for i in turn.interrupts:
                print("/".join([*i.path, i.name]) + "#" + str(i.ref))
        return
    assert command == "approve", command
    if rest:  # wait for the go file, so that several processes answer at once
        (Path(rest[0]).parent / f"ready-{os.getpid()}").touch()
        while not Path(rest[0]).exists():
            time.sleep(0.005)
    for turn in turns:
        res = turn.chat().resume_sync(restart=[i.approve() for i in turn.interrupts])
        print(res.finish_reason, res.snapshot_id)


if __name__ == "__main__":
    main(*sys.argv[1:])
