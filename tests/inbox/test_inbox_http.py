"""The inbox, approvers and answer links over HTTP, against real processes.

A real ``nb-agents serve inbox_app:app`` (SQLite, PostgreSQL) with three keys
(ana, bob: principals; lee: an approver), and a webhook receiver on 127.0.0.1
that verifies each Standard Webhooks signature on its own:

* ana's pause is listed for ana and lee (``POST /trust/pending``), not for bob;
  bob's answer and lee's message into ana's session are NOT_FOUND; lee answers
  it from the listing, the tool runs once, the audit says lee for ana;
* each pause is POSTed to the receiver, signed; its ``answerUrl`` opens the
  answer page, which approves once: a second visit says it was answered, a
  second POST is refused (409), a tampered link is refused (403);
* with the receiver slow (it holds the request) or down (nothing listens), the
  turn pauses at once; the delivery arrives when the receiver answers or comes
  back (retries in the background).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from edges.served import Served, free_port
from inbox_app import SECRET, headers
from receiver import Receiver
from trust_app import call, directive, make_agent, read_ledger

import nb_agents as nba
from nb_agents.inbox import answer_items, quick_answer
from nb_agents.notify.links import _key

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
HOSTILE = '<img src=x onerror="window.pwned=1">bob'


@dataclass
class Setup:
    server: Served
    receiver: Receiver
    agent: nba.Agent  # the served agent's store, read in this process (audit)
    ledger: Path

    def remote(self, who: str) -> nba.RemoteAgent:
        return nba.remote_agent(f"{self.server.url}/trust", headers=headers(who))

    def runs(self) -> list[str]:
        return [line["ref"] for line in read_ledger(self.ledger)]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def setup(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp(f"inbox-{request.param}")
    ledger = tmp / "ledger.jsonl"
    if request.param == "postgres":
        import pg

        from nb_agents.stores.postgres import PostgresSessionStore

        db = pg.fresh_dsn()
        store: nba.SessionStore = PostgresSessionStore(db)
    else:
        db = str(tmp / "inbox.db")
        store = nba.SqliteSessionStore(db)
    receiver = Receiver(_key(SECRET))
    port = free_port()
    env = {
        "NBA_TRUST_LEDGER": str(ledger),
        "NBA_TRUST_DB": db,
        "NBA_HOOK_URL": receiver.url,
        "NBA_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(TESTS / "trust"), str(TESTS)]),
    }
    server = Served(tmp, target="inbox_app:app", env=env, port=port)
    try:
        yield Setup(server, receiver, make_agent(store, ledger), ledger)
    finally:
        server.stop()
        receiver.stop()
        close = getattr(store, "close", None)
        if close is not None:
            close()


def _post(setup: Setup, who: str, verb: str, data: Any) -> httpx.Response:
    return httpx.post(f"{setup.server.url}/trust/{verb}", json={"data": data}, headers=headers(who))


def event_for(setup: Setup, session_id: str) -> Any:
    found: list[Any] = []

    def seen() -> bool:
        found[:] = [r for r in setup.receiver.delivered() if r.json["sessionId"] == session_id]
        return bool(found)

    setup.receiver.wait(seen, f"the pause of {session_id} to be delivered")
    return found[0]


async def test_approver_requester_and_outsider_over_http(setup: Setup) -> None:
    ana, bob, lee = setup.remote("ana"), setup.remote("bob"), setup.remote("lee")
    before = setup.runs()
    res = await ana.chat().send(directive(call("h1", 5)))
    assert res.finish_reason == "interrupted"
    mine = [t for t in await ana.pending() if t.session_id == res.session_id]
    theirs = [t for t in await lee.pending(tool="transfer") if t.session_id == res.session_id]
    assert len(mine) == 1 and len(theirs) == 1 and theirs[0].requested_by == "ana"
    assert [t for t in await bob.pending() if t.session_id == res.session_id] == []
    assert _post(setup, "bob", "pending", {"tool": 5}).status_code == 400  # a bad filter, named
    # bob: NOT_FOUND for the session, its snapshot, an answer
    assert _post(setup, "bob", "getSnapshot", {"sessionId": res.session_id}).status_code == 404
    with pytest.raises(nba.AgentError) as err:
        await bob.chat(snapshot_id=res.snapshot_id).resume(restart=[res.interrupts[0].approve()])
    assert err.value.status == "NOT_FOUND"
    # lee may read it, but never send into ana's session
    assert _post(setup, "lee", "getSnapshot", {"sessionId": res.session_id}).status_code == 200
    with pytest.raises(nba.AgentError) as err:
        await lee.chat(session_id=res.session_id).send(directive(call("h9", 9)))
    assert err.value.status == "NOT_FOUND"
    assert setup.runs() == before
    # lee answers from the listing: once, audited as lee's for ana
    (row,) = theirs[0].items
    [out] = await answer_items([(row, *quick_answer(row, "approve"))])
    assert out.ok and out.response is not None and out.response.finish_reason == "stop"
    [again] = await answer_items([(row, *quick_answer(row, "approve"))])  # the batch sent twice
    assert again.ok
    assert setup.runs() == [*before, "h1"]
    [rec] = await setup.agent.audit(res.session_id or "")
    assert (rec.answered_by, rec.requested_by, rec.decision) == ("lee", "ana", "person")
    assert [t for t in await lee.pending() if t.session_id == res.session_id] == []


async def test_a_signed_pause_and_its_answer_link(setup: Setup) -> None:
    ana = setup.remote("ana")
    before = setup.runs()
    res = await ana.chat().send(directive(call("w1", 5, to=HOSTILE)))
    got = event_for(setup, res.session_id or "")
    assert got.verified, "the Standard Webhooks signature did not verify"
    body = got.json
    assert (body["type"], body["agent"], body["snapshotId"], body["requestedBy"]) == (
        "turn.paused", "trust", res.snapshot_id, "ana",
    )  # fmt: skip
    assert body["interrupts"][0]["name"] == "transfer" and body["interrupts"][0]["input"]["to"] == HOSTILE
    link = body["answerUrl"]
    assert link.startswith(f"{setup.server.url}/trust/answer?token=")
    page = httpx.get(link)
    assert page.status_code == 200 and "no-referrer" in page.headers["referrer-policy"]
    assert "script-src" not in page.headers["content-security-policy"]  # default-src 'none': no script
    assert HOSTILE not in page.text and "&lt;img src=x onerror=" in page.text
    assert 'value="approve"' in page.text and 'value="cancel"' in page.text and "Raw JSON" not in page.text
    token = link.split("token=", 1)[1]
    # a tampered link: refused, nothing ran
    bad = token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")
    assert httpx.get(f"{setup.server.url}/trust/answer?token={bad}").status_code == 403
    form = {"token": bad, "action": "approve"}
    assert httpx.post(f"{setup.server.url}/trust/answer", data=form).status_code == 403
    # JSON is not a form: refused (a page on another site cannot send the token it does not have anyway)
    assert httpx.post(f"{setup.server.url}/trust/answer", json={"token": token}).status_code == 415
    assert setup.runs() == before
    done = httpx.post(f"{setup.server.url}/trust/answer", data={"token": token, "action": "approve"})
    assert done.status_code == 200 and "Approved" in done.text
    assert setup.runs() == [*before, "w1"]
    # a second visit says so; a second answer changes nothing
    assert "already answered" in httpx.get(link).text
    late = httpx.post(f"{setup.server.url}/trust/answer", data={"token": token, "action": "deny"})
    assert late.status_code == 409 and setup.runs() == [*before, "w1"]
    [rec] = await setup.agent.audit(res.session_id or "")
    assert (rec.answered_by, rec.requested_by, rec.decision, rec.kind) == (
        "answer-link",
        "ana",
        "person",
        "restart",
    )


async def test_a_cancel_from_a_link(setup: Setup) -> None:
    ana = setup.remote("ana")
    before = setup.runs()
    res = await ana.chat().send(directive(call("w2", 5)))
    link = event_for(setup, res.session_id or "").json["answerUrl"]
    token = link.split("token=", 1)[1]
    form = {"token": token, "action": "cancel", "reason": "changed my mind"}
    done = httpx.post(f"{setup.server.url}/trust/answer", data=form)
    assert done.status_code == 200 and "Cancelled" in done.text
    assert setup.runs() == before
    [rec] = await setup.agent.audit(res.session_id or "")
    assert (rec.kind, rec.decision, rec.answer) == (
        "cancel", "person", {"cancelled": "The user cancelled the call to 'transfer': changed my mind"},
    )  # fmt: skip


async def test_a_slow_receiver_never_holds_the_turn(setup: Setup) -> None:
    receiver = setup.receiver
    receiver.hold = True
    receiver.release.clear()
    try:
        res = await setup.remote("ana").chat().send(directive(call("s1", 5)))
        # the turn answered while the receiver holds every request it gets unanswered
        assert res.finish_reason == "interrupted"
        assert not receiver.release.is_set()
    finally:
        receiver.release.set()
        receiver.hold = False
    assert event_for(setup, res.session_id or "").verified


async def test_a_receiver_that_is_down_gets_the_pause_when_it_is_back(setup: Setup) -> None:
    port = setup.receiver.port
    setup.receiver.stop()  # nothing listens on its port now
    res = await setup.remote("ana").chat().send(directive(call("d1", 5)))
    assert res.finish_reason == "interrupted"
    setup.receiver = Receiver(_key(SECRET), port=port)  # back: a retry finds it
    got = event_for(setup, res.session_id or "")
    assert got.verified and got.json["snapshotId"] == res.snapshot_id


async def test_the_inbox_widget_answers_a_served_agent(setup: Setup) -> None:
    """`Inbox` over `RemoteAgent`s: the approver's rows come from the server's /pending, answered once."""
    from nb_agents.notebook import Inbox

    ana, lee = setup.remote("ana"), setup.remote("lee")
    res = await ana.chat().send(directive(call("w1", 5)))
    inbox = await Inbox(lee, tick=None)
    rows = [r for r in inbox.rows if r.item.session_id == res.session_id]
    assert [r.item.interrupt.ref for r in rows] == ["w1"] and rows[0].item.turn.requested_by == "ana"
    before = setup.runs().count("w1")
    rows[0].selected.value = True
    outcomes = await inbox.send("approve")
    assert [o.ok for o in outcomes] == [True]
    assert setup.runs().count("w1") == before + 1
    assert [r for r in inbox.rows if r.item.session_id == res.session_id] == []
    # a second inbox finds nothing left of it
    again = await Inbox(lee, tick=None)
    assert [r for r in again.rows if r.item.session_id == res.session_id] == []
