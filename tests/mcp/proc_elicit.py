"""An agent with one MCP server on a SQLite file, driven from separate processes by
tests/mcp/test_mcp_durable.py.

``python proc_elicit.py ask DB SERVER CALL``: run a turn whose model calls CALL
(``[tool, ref, input]`` as JSON) on SERVER (``[name, command...]`` as JSON);
print ``paused <session id>`` once the server's question paused it, then wait
to be killed (the test kills this process, and its stdio server with it).

``python proc_elicit.py answer DB SERVER ANSWER``: find the paused turn with
``agent.pending()``, answer its question (ANSWER: ``{"content": {...},
"rerun": false}`` as JSON; no content declines) and print the outcome:
``stop <the tool's output as JSON>``, ``interrupted <the next question>``,
``failed <status> <message>`` or ``nothing waiting``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import nb_agents as nba
from nb_agents.mcp import ElicitationRequest, MCPServer
from nb_agents.stores.sqlite import SqliteSessionStore
from nb_agents.testing import FunctionModel


def build(db: str, server: list[str], call: list[Any] | None) -> nba.Agent:
    def rules(req: nba.GenerateRequest) -> dict[str, Any] | str:
        last = req.messages[-1]
        if last.role == "tool":
            resp = last.content[0].tool_response
            return "done: " + json.dumps(resp.output if resp is not None else None)
        assert call is not None, "the answering process never calls the model first"
        name, ref, arguments = call
        request = {"toolRequest": {"name": name, "ref": ref, "input": arguments}}
        return {"message": {"role": "model", "content": [request]}, "finishReason": "stop"}

    name, *command = server
    mcp = MCPServer.stdio(command, name=name, approval=False)  # the question is the only pause
    return nba.define_agent("asker", model=FunctionModel(rules), tools=[mcp], store=SqliteSessionStore(db))


async def ask(db: str, server: list[str], call: list[Any]) -> None:
    agent = build(db, server, call)
    res = await agent.chat().send("go")
    assert res.finish_reason == "interrupted", res.finish_reason
    print("paused", res.session_id, flush=True)
    while True:  # the test kills this process here, with the MCP server it started
        time.sleep(1)


async def answer(db: str, server: list[str], given: dict[str, Any]) -> None:
    agent = build(db, server, None)
    try:
        waiting = await agent.pending()
        if not waiting:
            print("nothing waiting", flush=True)
            return
        (turn,) = waiting
        question = ElicitationRequest.claim(turn.interrupts[0])
        assert question is not None, turn.interrupts[0].data
        rerun = bool(given.get("rerun"))
        content = given.get("content")
        part = question.accept(content, rerun=rerun) if content is not None else question.decline(rerun=rerun)
        # after a failed answer, a different answer continues from that attempt (the engine's rule)
        chat = turn.chat() if turn.attempt is None else agent.chat(snapshot_id=turn.attempt.snapshot_id)
        try:
            res = await chat.resume(restart=[part])
        except nba.AgentError as exc:
            print("failed", exc.status, str(exc).replace("\n", " "), flush=True)
            return
        if res.finish_reason == "interrupted":
            print("interrupted", json.dumps(res.interrupts[0].data.get("message")), flush=True)
        else:
            print(res.finish_reason, res.text.removeprefix("done: "), flush=True)
    finally:
        await agent.aclose()


def main(argv: list[str]) -> None:
    verb, db, server, arg = argv[0], argv[1], json.loads(argv[2]), json.loads(argv[3])
    asyncio.run(ask(db, server, arg) if verb == "ask" else answer(db, server, arg))


if __name__ == "__main__":
    main(sys.argv[1:])
