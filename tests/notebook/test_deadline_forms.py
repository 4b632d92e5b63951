"""The form of a pause with a deadline says how long is left and what happens then (issue 15, item 2)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from helpers import text_response, tool_call_response
from widget_helpers import html_of

import nb_agents as nba
from nb_agents.notebook import TurnView
from nb_agents.render.deadline import deadline_words
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def gated(**deadline: object) -> nba.Agent:
    @nba.tool(name="transfer")
    async def transfer(amount: int) -> str:
        return "sent"

    model = ScriptedModel([tool_call_response(("transfer", "t1", {"amount": 500})), text_response("over")])
    gate = nba.middleware.ToolApproval(**deadline)  # type: ignore[arg-type]
    return nba.define_agent(
        "bank", model=model, tools=[transfer], store=nba.InMemorySessionStore(), use=[gate]
    )


async def test_the_form_shows_the_time_left_and_the_default_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent = gated(expires_in=timedelta(hours=1), on_expiry="<script>alert(1)</script> nobody approved")
    res = await agent.chat().send("pay")
    shown = html_of(TurnView(res).forms[0])
    assert "Expires</span>" in shown and "in 59 min (at " in shown
    assert "then denied (&quot;&lt;script&gt;alert(1)&lt;/script&gt; nobody approved&quot;)" in shown
    assert "<script>" not in shown


async def test_an_expired_form_says_so_and_an_answer_from_it_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent = gated(expires_in=0.2)
    res = await agent.chat().send("pay")
    await asyncio.sleep(0.4)
    view = TurnView(res)
    form = view.forms[0]
    assert "Expired</span>" in html_of(form) and ": denied; an answer is no longer taken" in html_of(form)
    form.approve_button.click()
    assert view.task is not None
    assert await view.task is None
    assert "expired at" in html_of(view) and "FAILED_PRECONDITION" in html_of(view)


def test_static_mode_shows_no_times(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NB_AGENTS_STATIC", "1")
    at = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
    assert deadline_words(at, "approved") == "Deadline: if nobody answers in time, approved"


def test_the_audit_table_says_a_default_applied_on_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    from nb_agents.render.tables import audit_words

    monkeypatch.setenv("NB_AGENTS_STATIC", "1")
    mark = {"at": "2026-05-03T14:02:00.000Z", "applied": {"deny": "Too late."}}
    record = nba.AuditRecord("s", "p", "c", "transfer", "t1", "expired", mark, None, "2026-05-03T14:02:01Z")
    assert audit_words(record) == "expired, denied: Too late."
    approve = {**mark, "applied": {"approve": True}}
    approved = nba.AuditRecord(
        "s", "p", "c", "transfer", "t1", "expired", approve, None, "2026-05-03T14:02:01Z"
    )
    assert audit_words(approved) == "expired, approved"
    monkeypatch.delenv("NB_AGENTS_STATIC")
    assert audit_words(record).startswith("expired at ") and audit_words(record).endswith(
        ", denied: Too late."
    )
