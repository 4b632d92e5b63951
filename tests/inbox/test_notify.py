"""`nba.notify`: the on_pause hook never holds or fails a turn; webhook signing, retries; answer links.

The network is an `httpx.MockTransport` here (the real receiver and server are in
test_inbox_http.py); the answer page runs in the real ASGI app through httpx's ASGI transport.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from receiver import verify
from store_kinds import make_store
from trust_app import call, directive, make_agent, read_ledger

import nb_agents as nba
from nb_agents.notify import AnswerLinks, LinkError, PauseEvent, sign
from nb_agents.notify.links import _key
from nb_agents.server import create_app

pytestmark = pytest.mark.anyio

SECRET = "whsec_" + "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3"


def test_the_signature_is_standard_webhooks() -> None:
    key = _key(SECRET)
    assert key == b"0123456789abcdef01234567"  # a whsec_ secret is its base64-decoded bytes
    body = b'{"a":1}'
    stamp = int(time.time())
    headers = {
        "webhook-id": "msg_1",
        "webhook-timestamp": str(stamp),
        "webhook-signature": sign(key, "msg_1", stamp, body),
    }
    assert headers["webhook-signature"].startswith("v1,") and verify(key, headers, body)
    assert not verify(key, headers, body + b" ")
    assert not verify(key, {**headers, "webhook-timestamp": str(stamp - 3600)}, body)  # too old
    with pytest.raises(ValueError, match="at least 16 bytes"):
        nba.notify.webhook("https://h.example/x", secret="short")
    with pytest.raises(ValueError, match="http"):
        nba.notify.webhook("ftp://h.example/x", secret=SECRET)


def test_answer_links_are_bound_signed_and_expire() -> None:
    links = AnswerLinks(SECRET, public_url="http://127.0.0.1:8000/")
    token = links.token("bank", "snap-1")
    claim = links.verify(token, "bank")
    assert (claim.agent, claim.snapshot_id) == ("bank", "snap-1")
    assert links.url("bank", "snap-1").startswith("http://127.0.0.1:8000/bank/answer?token=")
    with pytest.raises(LinkError, match="not valid"):
        links.verify(token, "shop")  # another agent's route
    head, mac = token.split(".")
    with pytest.raises(LinkError, match="not valid"):
        links.verify(head[:-2] + "xx." + mac, "bank")
    with pytest.raises(LinkError, match="not valid"):
        AnswerLinks("another-secret-0123456789", public_url="http://x.example").verify(token, "bank")
    old = links.token("bank", "snap-1", now=time.time() - 2 * 86400)
    with pytest.raises(LinkError, match="expired") as err:
        links.verify(old, "bank")
    assert err.value.expired


async def test_deliveries_retry_then_stop() -> None:
    answers = iter([503, 502, 204])
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(next(answers))

    hook = nba.notify.webhook(
        "https://h.example/x", secret=SECRET, backoff=0.01, transport=httpx.MockTransport(handler)
    )
    hook(PauseEvent("bank", "s1", "snap-1", [], "ana"))
    await hook.flush()
    [d] = hook.deliveries
    assert (d.attempts, d.status, d.delivered) == (3, 204, True)
    assert len({r.headers["webhook-id"] for r in seen}) == 1  # one event, one id, on every retry
    assert all(verify(_key(SECRET), dict(r.headers), r.content) for r in seen)
    assert d.payload["answerUrl"] is None  # no public_url: no link
    refused = nba.notify.webhook(
        "https://h.example/x",
        secret=SECRET,
        backoff=0.01,
        transport=httpx.MockTransport(lambda r: httpx.Response(400)),
    )
    refused(PauseEvent("bank", "s2", "snap-2", []))
    await refused.flush()
    assert (refused.deliveries[0].attempts, refused.deliveries[0].delivered) == (1, False)  # 400: not retried


async def test_a_hook_that_raises_or_hangs_never_touches_the_turn(tmp_path: Path) -> None:
    calls: list[str] = []

    def broken(event: PauseEvent) -> None:
        calls.append(event.snapshot_id or "")
        raise RuntimeError("the hook is broken")

    agent = make_agent(make_store("sqlite", tmp_path), tmp_path / "ledger.jsonl", on_pause=broken)
    res = await agent.chat().send(directive(call("t1", 5)))
    assert res.finish_reason == "interrupted" and calls == [res.snapshot_id]

    import asyncio

    started = asyncio.Event()

    async def hangs(event: PauseEvent) -> None:
        started.set()
        await asyncio.sleep(3600)

    other = make_agent(make_store("memory", tmp_path), tmp_path / "other.jsonl", on_pause=hangs)
    res2 = await other.chat().send(directive(call("t2", 5)))
    assert res2.finish_reason == "interrupted"  # returned while the hook still waits
    await asyncio.wait_for(started.wait(), 10)
    from nb_agents.notify.events import _TASKS

    for task in list(_TASKS):  # the hook would wait an hour: end it with the test
        task.cancel()
    with pytest.raises(TypeError, match="callable"):
        nba.define_agent("x", model="echo", on_pause="https://not-a-hook")  # type: ignore[arg-type]


async def test_the_answer_page_refuses_what_it_must(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    hook = nba.notify.webhook(
        "https://h.example/x", secret=SECRET, public_url="http://agents.test",
        transport=httpx.MockTransport(lambda r: httpx.Response(200)),
    )  # fmt: skip
    agent = make_agent(make_store("sqlite", tmp_path), ledger, on_pause=hook)
    res = await agent.chat().send(directive(call("t1", 5)))
    await hook.flush()
    assert hook.links is not None
    token = hook.deliveries[0].payload["answerUrl"].split("token=", 1)[1]
    expired = hook.links.token("trust", res.snapshot_id or "", now=time.time() - 2 * 86400)
    transport = httpx.ASGITransport(app=create_app([agent]))
    async with httpx.AsyncClient(transport=transport, base_url="http://agents.test") as page:
        got: Any = await page.get(f"/trust/answer?token={expired}")
        assert got.status_code == 410 and "expired" in got.text
        got = await page.post("/trust/answer", data={"token": expired, "action": "approve"})
        assert got.status_code == 410
        got = await page.post("/trust/answer", data={"token": token, "action": "launch"})
        assert got.status_code == 400
        got = await page.get("/trust/answer")
        assert got.status_code == 403
        stuffed = "&".join(f"f{i}=x" for i in range(20))
        got = await page.post(
            "/trust/answer", content=stuffed, headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert got.status_code == 400
        assert read_ledger(ledger) == []
        got = await page.post("/trust/answer", data={"token": token, "action": "approve"})
        assert got.status_code == 200 and [line["ref"] for line in read_ledger(ledger)] == ["t1"]
    # an agent whose hook makes no links has no page
    plain = make_agent(make_store("memory", tmp_path), ledger, name="plain")
    assert not any(getattr(r, "path", "").endswith("/answer") for r in create_app([plain]).routes)
