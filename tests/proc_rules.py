"""A process for tests/test_rules_multiprocess.py: a table agent on a shared store.

``python tests/proc_rules.py always STORE``: approve ``readTable`` always in a new
session, print the session id and the rule id. ``python tests/proc_rules.py slow
STORE SESSION MARK``: send ``slowTable big`` in the session (the session and its
rule loaded), touch MARK when the tool starts, wait until MARK is removed, finish
the turn, print its text. ``rules STORE SESSION``: print the session's rule ids.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import nb_agents as nba
from nb_agents.middleware import ToolApproval
from nb_agents.testing import FunctionModel
from nb_agents.types import GenerateRequest


def store_of(where: str) -> nba.SessionStore:
    if where.startswith(("postgresql://", "host=")):
        from nb_agents.stores.postgres import PostgresSessionStore

        return PostgresSessionStore(where)
    return nba.SqliteSessionStore(where)


def model_fn(request: GenerateRequest) -> object:
    last = request.messages[-1]
    if last.role == "tool":
        return f"tool said: {last.content[0].tool_response.output}"  # type: ignore[union-attr]
    name, _, arg = last.text.partition(" ")
    call = {"toolRequest": {"name": name, "ref": f"c{len(request.messages)}", "input": {"table": arg}}}
    return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}


def build(where: str, mark: Path | None = None) -> nba.Agent:
    @nba.tool(name="readTable")
    async def read_table(table: str) -> str:
        return f"rows of {table}"

    @nba.tool(name="slowTable")
    async def slow_table(table: str) -> str:
        assert mark is not None
        mark.touch()
        while mark.exists():  # the test removes it once it has revoked the rule
            await asyncio.sleep(0.01)
        return f"slow rows of {table}"

    return nba.define_agent(
        "tables",
        model=FunctionModel(model_fn),
        tools=[read_table, slow_table],
        store=store_of(where),
        use=[ToolApproval(allowed_tools=["slowTable"])],
    )


async def main(verb: str, where: str, *rest: str) -> None:
    if verb == "always":
        agent = build(where)
        chat = agent.chat()
        held = await chat.send("readTable sales")
        hold = nba.ApprovalHold.claim(held.interrupts[0].part)
        assert hold is not None
        await chat.resume(restart=[hold.approve(always=True)])
        [rule] = await agent.rules(chat.session_id or "")
        print(chat.session_id, rule.id)
    elif verb == "slow":
        session_id, mark = rest
        agent = build(where, Path(mark))
        print((await agent.chat(session_id=session_id).send("slowTable big")).text)
    elif verb == "rules":
        agent = build(where)
        print(" ".join(r.id for r in await agent.rules(rest[0])) or "none")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
