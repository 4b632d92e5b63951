"""Who may answer (issue 13): credentials, session ownership, agents on one store, cross-site requests.

Every attack of the issue, against a real uvicorn server on 127.0.0.1: each is
refused the way an unknown id is, nothing runs, and the owner's own answer
still works afterwards.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import nb_agents as nba
from nb_agents.server import api_key

from .conftest import Serve
from .live import TRANSFER_CALL, banking_agent

pytestmark = pytest.mark.anyio

KEYS = {"alice": "key-alice", "bob": "key-bob", "rita": "key-rita"}
HELLO = {"role": "user", "content": [{"text": "Transfer $500 to savings"}]}


def headers(who: str | None) -> dict[str, str]:
    return {"Authorization": KEYS[who]} if who else {}


async def post(url: str, body: Any, who: str | None = None, **kw: Any) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.post(url, json=body, headers={**headers(who), **kw.pop("extra", {})}, **kw)


def restart(paused: dict[str, Any]) -> dict[str, Any]:
    ref = paused["message"]["content"][0]["toolRequest"]["ref"]
    part = {"toolRequest": {"name": TRANSFER_CALL[0], "ref": ref, "input": TRANSFER_CALL[2]}}
    part["metadata"] = {"resumed": {"approved": True}}
    return {"data": {"resume": {"restart": [part]}}, "init": {"snapshotId": paused["snapshotId"]}}


@pytest.fixture
def bank(serve: Serve) -> tuple[str, list[Any], nba.SessionStore]:
    store = nba.InMemorySessionStore()
    agent, _, executed = banking_agent(store, turns=4)
    url = serve(agent, context_provider=api_key(KEYS)) + "/bankingAgent"
    return url, executed, store


async def alice_paused(url: str) -> dict[str, Any]:
    res = await post(url, {"data": {"message": HELLO}, "init": {"sessionId": "alice"}}, "alice")
    out = res.json()["result"]
    assert out["finishReason"] == "interrupted"
    return dict(out)


async def test_without_or_with_wrong_credentials_nothing_is_read_or_run(bank: Any) -> None:
    url, executed, store = bank
    for path, body in [
        ("", {"data": {"message": HELLO}, "init": {}}),
        ("/getSnapshot", {"data": {"sessionId": "alice"}}),
        ("/abort", {"data": {"snapshotId": "x"}}),
    ]:
        res = await post(url + path, body)
        assert res.status_code == 401 and res.json() == {
            "status": "UNAUTHENTICATED",
            "message": "Unauthenticated",
        }
        res = await post(url + path, body, extra={"Authorization": "guess"})
        assert res.status_code == 403
        assert res.json() == {"status": "PERMISSION_DENIED", "message": "Permission Denied"}
    assert await store.session_ids() == [] and executed == []
    ok = await post(url, {"data": {"message": HELLO}, "init": {}}, extra={"Authorization": "Bearer key-bob"})
    assert ok.json()["result"]["finishReason"] == "interrupted"


async def test_another_principal_can_neither_read_nor_answer_nor_abort(bank: Any) -> None:
    url, executed, store = bank
    paused = await alice_paused(url)
    unknown_snapshot = await post(url + "/getSnapshot", {"data": {"snapshotId": "nope"}}, "bob")
    for lookup in ({"sessionId": "alice"}, {"snapshotId": paused["snapshotId"]}):
        res = await post(url + "/getSnapshot", {"data": lookup}, "bob")
        assert res.status_code == 404 == unknown_snapshot.status_code
    # bob answers alice's paused transfer: the same answer as for an unknown snapshot, nothing runs
    res = (await post(url, restart(paused), "bob")).json()["result"]
    fake = dict(restart(paused), init={"snapshotId": "no-such-snapshot"})
    unknown = (await post(url, fake, "bob")).json()["result"]
    assert res["finishReason"] == unknown["finishReason"] == "failed"
    assert res["error"]["status"] == unknown["error"]["status"] == "NOT_FOUND"
    # a message into her session by its id, an abort of her snapshot: refused too
    into = (await post(url, {"data": {"message": HELLO}, "init": {"sessionId": "alice"}}, "bob")).json()
    assert into["result"]["error"]["status"] == "NOT_FOUND"
    abort = (await post(url + "/abort", {"data": {"snapshotId": paused["snapshotId"]}}, "bob")).json()
    assert abort == {"result": {"snapshotId": paused["snapshotId"]}}  # as for an unknown id: no status
    assert executed == []
    # alice's own answer still works, once
    done = (await post(url, restart(paused), "alice")).json()["result"]
    assert done["finishReason"] == "stop" and len(executed) == 1
    assert (await post(url + "/getSnapshot", {"data": {"sessionId": "alice"}}, "alice")).status_code == 200


async def test_a_policy_lets_a_reviewer_answer_but_not_read_others_history(serve: Serve) -> None:
    def reviewers(principal: str | None, snap: nba.SessionSnapshot, action: str) -> bool:
        return principal == "rita" and action == "resume"

    store = nba.InMemorySessionStore()
    agent, _, executed = banking_agent(store, turns=2, authorize=reviewers)
    url = serve(agent, context_provider=api_key(KEYS)) + "/bankingAgent"
    paused = await alice_paused(url)
    assert (await post(url + "/getSnapshot", {"data": {"sessionId": "alice"}}, "rita")).status_code == 404
    done = (await post(url, restart(paused), "rita")).json()["result"]
    assert done["finishReason"] == "stop" and len(executed) == 1
    [record] = await agent.audit("alice")
    assert record.answered_by == "rita"  # the authenticated principal, not what a client claims


async def test_agents_on_one_store_cannot_reach_each_others_sessions(serve: Serve) -> None:
    store = nba.InMemorySessionStore()
    bank_a, _, executed = banking_agent(store)
    bank_b, _, _ = banking_agent(store, name="otherBank")
    base = serve([bank_a, bank_b])
    res = await post(base + "/bankingAgent", {"data": {"message": HELLO}, "init": {"sessionId": "s"}})
    paused = res.json()["result"]
    assert (await post(base + "/otherBank/getSnapshot", {"data": {"sessionId": "s"}})).status_code == 404
    via_b = (await post(base + "/otherBank", restart(paused))).json()["result"]
    assert via_b["error"]["status"] == "NOT_FOUND" and executed == []


async def test_a_cross_site_text_plain_post_is_refused_unread(bank: Any) -> None:
    url, executed, store = bank
    paused = await alice_paused(url)
    import json

    async with httpx.AsyncClient(timeout=10) as client:
        res = await client.post(
            url,
            content=json.dumps(restart(paused)),
            headers={"Content-Type": "text/plain", **headers("alice")},
        )
    assert res.status_code == 415 and "application/json" in res.json()["message"]
    assert executed == []


async def test_cors_admits_only_the_origins_it_names(serve: Serve) -> None:
    agent, _, _ = banking_agent(nba.InMemorySessionStore())
    url = serve(agent, cors_origins=["https://app.example"]) + "/bankingAgent"
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    async with httpx.AsyncClient(timeout=10) as client:
        ok = await client.options(url, headers={"Origin": "https://app.example", **preflight})
        bad = await client.options(url, headers={"Origin": "https://evil.example", **preflight})
        simple = await client.post(
            url, json={"data": {"message": HELLO}, "init": {}}, headers={"Origin": "https://evil.example"}
        )
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "https://app.example"
    assert "access-control-allow-origin" not in bad.headers
    assert "access-control-allow-origin" not in simple.headers
    plain = serve(banking_agent(nba.InMemorySessionStore())[0]) + "/bankingAgent"
    async with httpx.AsyncClient(timeout=10) as client:
        none = await client.options(plain, headers={"Origin": "https://app.example", **preflight})
    assert "access-control-allow-origin" not in none.headers  # no CORS unless asked for
