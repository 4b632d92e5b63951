"""Partial answers over a real server: the flag is part of the wire input (issue 15)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from store_kinds import make_store
from test_partial import ACCOUNTS, approve, bank

import nb_agents as nba

from .conftest import Serve

pytestmark = pytest.mark.anyio


async def test_the_remote_client_answers_some_now_and_the_rest_later(serve: Serve, tmp_path: Path) -> None:
    agent, model, ran = bank(make_store("sqlite", tmp_path))
    url = serve(agent)
    chat = nba.remote_agent(f"{url}/bank").chat()
    paused = await chat.send("pay everyone")
    first = await chat.resume(restart=[approve(paused, "alice")], partial=True)
    assert first.finish_reason == "interrupted" and ran == ["alice"] and model.calls == 1
    assert len(first.interrupts) == 2
    done = await chat.resume(restart=[approve(first, "bob"), approve(first, "carol")])
    assert done.text == "all sent" and ran == ACCOUNTS


async def test_partial_must_be_a_boolean_on_the_wire(serve: Serve, tmp_path: Path) -> None:
    agent, model, ran = bank(make_store("sqlite", tmp_path))
    url = serve(agent)
    paused = await agent.chat().send("pay everyone")
    restart = approve(paused, "alice").model_dump(by_alias=True, exclude_none=True)
    data = {"resume": {"restart": [restart]}, "partial": "yes"}
    body = {"data": data, "init": {"snapshotId": paused.snapshot_id}}
    async with httpx.AsyncClient() as client:
        res = await client.post(f"{url}/bank", json=body)
    assert res.status_code == 400 and "partial" in res.text
    assert ran == []
