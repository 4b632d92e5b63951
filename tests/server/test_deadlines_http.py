"""Deadlines over a real server (issue 15, item 2): the deadline is on the wire, a late answer
is a 400 in Genkit's error shape before anything runs, and a read over HTTP applies the default."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from store_kinds import make_store
from test_deadlines import PAST, SHORT, asking, gated

import nb_agents as nba

from .conftest import Serve

pytestmark = pytest.mark.anyio


async def test_a_late_answer_over_http_is_refused_in_band_and_the_default_applied(
    serve: Serve, tmp_path: Path
) -> None:
    agent, model, ran = gated(make_store("sqlite", tmp_path), expires_in=SHORT)
    url = serve(agent)
    paused = await nba.remote_agent(f"{url}/bank").chat().send("pay")
    (i,) = paused.interrupts
    assert i.part.metadata is not None and i.part.metadata["expiresAt"].endswith("Z")  # on the wire
    assert i.expires_at is not None
    approve = i.approve().model_dump(by_alias=True, exclude_none=True)
    await asyncio.sleep(PAST)
    body = {"data": {"resume": {"restart": [approve]}}, "init": {"snapshotId": paused.snapshot_id}}
    async with httpx.AsyncClient() as client:
        res = await client.post(f"{url}/bank", json=body)
    # refused as every refused answer is: a failed output naming the status (Genkit's shape)
    out = res.json()["result"]
    assert res.status_code == 200 and out["finishReason"] == "failed"
    err = out["error"]
    assert err["status"] == "FAILED_PRECONDITION"
    assert f"expired at {i.part.metadata['expiresAt']}" in err["message"] and "denied" in err["message"]
    assert ran == []  # refused before anything ran; the default (a denial) went on instead
    assert model.calls == 2
    (record,) = await agent.audit(paused.session_id)
    assert record.kind == "expired"


async def test_the_remote_client_raises_agent_error_failed_precondition_for_a_late_answer(
    serve: Serve, tmp_path: Path
) -> None:
    agent, model = asking(make_store("sqlite", tmp_path), expires_in=SHORT)
    url = serve(agent)
    chat = nba.remote_agent(f"{url}/asker").chat()
    paused = await chat.send("ask me")
    await asyncio.sleep(PAST)
    with pytest.raises(nba.AgentError, match="expired at") as info:
        await chat.resume(respond=[paused.interrupts[0].respond(True)])
    assert info.value.status == "FAILED_PRECONDITION"


async def test_get_snapshot_over_http_applies_the_default(serve: Serve, tmp_path: Path) -> None:
    agent, model, ran = gated(
        make_store("sqlite", tmp_path), expires_in=SHORT, on_expiry=nba.Expiry.approve()
    )
    url = serve(agent)
    paused = await nba.remote_agent(f"{url}/bank").chat().send("pay")
    await asyncio.sleep(PAST)
    async with httpx.AsyncClient() as client:
        res = await client.post(f"{url}/bank/getSnapshot", json={"data": {"sessionId": paused.session_id}})
    assert res.status_code == 200
    snap = res.json()["result"]
    assert snap["finishReason"] == "stop" and snap["parentId"] == paused.snapshot_id
    assert ran == [500]
