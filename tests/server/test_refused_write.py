"""A store that refuses a turn's final row: the caller learns the store's own status and message.

The answered turn runs its tool, then the store refuses the row that records it
(``UNAVAILABLE: the session store is down``) but takes the failed row written in
its place. Before, the caller got a failed result with ``INTERNAL`` "could not
be stored" and the store's status and message were lost; now the store's error
is raised in-process and thrown over HTTP (503, or an error frame in a stream,
as Genkit's JS client expects), and the recorded row carries that status too.
The answer still took effect once: sent again, it replays the failure and the
tool does not run again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import nb_agents as nba
from nb_agents.errors import AgentError, UnavailableError
from nb_agents.testing import FunctionModel
from nb_agents.types import SessionSnapshot

from .conftest import Serve
from .test_wire import SSE, frames

pytestmark = pytest.mark.anyio

DOWN = "the session store is down"


class Refusing:
    """Fault injection: every row recording a finished answer (finish reason ``stop``) is refused
    inside the store's transaction; any other row goes in."""

    async def save_snapshot(self, snapshot_id: str, mutator: Any, **kwargs: Any) -> Any:
        def refusing(current: SessionSnapshot | None) -> Any:
            new = mutator(current)
            if new is not None and new.finish_reason == "stop":
                raise UnavailableError(DOWN)
            return new

        return await super().save_snapshot(snapshot_id, refusing, **kwargs)  # type: ignore[misc]


class RefusingMemoryStore(Refusing, nba.InMemorySessionStore):
    pass


class RefusingSqliteStore(Refusing, nba.SqliteSessionStore):
    pass


def bank(store: nba.SessionStore, ran: list[int]) -> nba.Agent:
    def rules(req: nba.GenerateRequest) -> Any:
        if req.messages[-1].role == "tool":
            return "transfer done"
        call = {"toolRequest": {"name": "transfer", "ref": "t1", "input": {"amount": 500}}}
        return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}

    @nba.tool(name="transfer")
    async def transfer(amount: int, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"amount": amount})
        ran.append(amount)
        return "ok"

    return nba.define_agent("bank", model=FunctionModel(rules), tools=[transfer], store=store)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[nba.SessionStore]:
    made = RefusingMemoryStore() if request.param == "memory" else RefusingSqliteStore(tmp_path / "agents.db")
    with made:
        yield made


async def test_in_process_the_store_error_is_raised_and_recorded(store: nba.SessionStore) -> None:
    ran: list[int] = []
    chat = bank(store, ran).chat()
    res = await chat.send("send 500")
    answer = res.interrupts[0].restart(resumed=True)
    with pytest.raises(UnavailableError) as err:
        await chat.resume(restart=[answer])
    assert (err.value.status, err.value.message) == ("UNAVAILABLE", DOWN)
    assert ran == [500]
    row = await store.get_latest(res.session_id)
    assert row is not None and row.status == "failed" and row.error is not None
    assert row.error.status == "UNAVAILABLE" and row.error.message.endswith(DOWN)
    # the answer took effect once: sent again, it is told what happened, and nothing runs
    with pytest.raises(AgentError) as again:
        await chat.resume(restart=[answer])
    assert again.value.status == "UNAVAILABLE" and ran == [500]


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
async def test_over_http_the_store_error_is_thrown_with_its_status(
    serve: Serve, store: nba.SessionStore, streaming: bool
) -> None:
    ran: list[int] = []
    url = serve(bank(store, ran)) + "/bank"
    async with httpx.AsyncClient(timeout=30) as client:
        hello = {"message": {"role": "user", "content": [{"text": "send 500"}]}}
        paused = (await client.post(url, json={"data": hello, "init": {}})).json()["result"]
        call = paused["message"]["content"][0]["toolRequest"]
        resume = {"restart": [{"toolRequest": call, "metadata": {"resumed": True}}]}
        body = {"data": {"resume": resume}, "init": {"snapshotId": paused["snapshotId"]}}
        res = await client.post(url, json=body, headers=SSE if streaming else {})
    if streaming:
        assert res.status_code == 200
        error = frames(res.text)[-1]["error"]
    else:
        assert res.status_code == 503
        error = res.json()
    assert error == {"status": "UNAVAILABLE", "message": DOWN}
    assert ran == [500]
