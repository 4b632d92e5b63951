"""Many approval cycles at once over a real server on SQLite, each answer sent three times at once.

The SQLite store commits the writes of concurrent turns that meet in one pass of
the loop together (`nb_agents.stores._sqlite_writes`): pauses of different
sessions, racing claims of one pause, final rows. Whatever lands in one batch,
each cycle's tool runs exactly once, and the three identical answers read one
outcome.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

import nb_agents as nba
from nb_agents.middleware import ToolApproval
from nb_agents.testing import FunctionModel

from .conftest import Serve

pytestmark = pytest.mark.anyio

CYCLES = 24


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def ledger_agent(store: nba.SessionStore) -> tuple[nba.Agent, list[tuple[str, str]]]:
    ran: list[tuple[str, str]] = []  # (cycle, idempotency key) per run of the tool

    @nba.tool(name="transfer")
    def transfer(cycle: str, ctx: nba.ToolContext) -> str:
        """Move money (held for approval)."""
        ran.append((cycle, ctx.idempotency_key))
        return cycle

    def reply(req: nba.GenerateRequest) -> dict[str, Any] | str:
        last = req.messages[-1]
        if last.role == "tool":
            return f"done {last.content[0].tool_response.output}"  # type: ignore[union-attr]
        call = {"name": "transfer", "ref": "t1", "input": {"cycle": last.text}}
        return {"message": {"role": "model", "content": [{"toolRequest": call}]}}

    agent = nba.define_agent(
        "bank", model=FunctionModel(reply), tools=[transfer], use=[ToolApproval()], store=store
    )
    return agent, ran


async def test_concurrent_cycles_each_run_their_tool_once(serve: Serve, tmp_path: Path) -> None:
    agent, ran = ledger_agent(nba.SqliteSessionStore(tmp_path / "cycles.db"))
    url = f"{serve(agent)}/bank"
    limits = httpx.Limits(max_connections=3 * CYCLES)

    async with httpx.AsyncClient(timeout=30, limits=limits) as client:

        async def cycle(n: int) -> list[dict[str, Any]]:
            msg = {"role": "user", "content": [{"text": f"c{n}"}]}
            first = (await client.post(url, json={"data": {"message": msg}, "init": {}})).json()["result"]
            assert first["finishReason"] == "interrupted", first
            [held] = [p for p in first["message"]["content"] if (p.get("metadata") or {}).get("interrupt")]
            restart = {"toolRequest": held["toolRequest"], "metadata": {"resumed": {"toolApproved": True}}}
            body = {"data": {"resume": {"restart": [restart]}}, "init": {"snapshotId": first["snapshotId"]}}
            answers = await asyncio.gather(*(client.post(url, json=body) for _ in range(3)))
            assert [a.status_code for a in answers] == [200, 200, 200]
            return [a.json()["result"] for a in answers]

        results = await asyncio.gather(*(cycle(n) for n in range(CYCLES)))

    assert sorted(c for c, _ in ran) == sorted(f"c{n}" for n in range(CYCLES))  # each cycle's tool once
    for n, answers in enumerate(results):
        assert {a["finishReason"] for a in answers} == {"stop"}, answers
        assert {a["snapshotId"] for a in answers} == {answers[0]["snapshotId"]}  # one outcome, replayed
        assert answers[0]["message"]["content"][0]["text"] == f"done c{n}"
    # every answer's row reads back as the outcome its callers were given
    for answers in results:
        row = await agent.get_snapshot(answers[0]["snapshotId"])
        assert row is not None and row.status == "completed"
