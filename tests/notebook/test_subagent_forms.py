"""A sub-agent's pause in the notebook: the form says which agent asks, and answers at the top."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from widget_helpers import html_of

import nb_agents as nba
from nb_agents.notebook import TurnView
from nb_agents.render import response_bundle

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from directives import directive, read_ledger, transfer_call  # noqa: E402
from subagent_app import ask, make_agents  # noqa: E402

pytestmark = pytest.mark.anyio


async def paused(tmp_path: Path, **options: bool) -> tuple[TurnView, nba.AgentResponse, Path]:
    ledger = tmp_path / "ledger.jsonl"
    lead, _, _ = make_agents(nba.InMemorySessionStore(), ledger, **options)
    chat = lead.chat()
    res = await chat.send(directive(ask("manager", "m1", ask("worker", "w1", transfer_call("t1", 5)))))
    return TurnView(res, chat), res, ledger


async def test_the_form_says_which_agent_asks_and_approving_runs_the_call_once(tmp_path: Path) -> None:
    view, res, ledger = await paused(tmp_path)
    (form,) = view.forms
    assert form.mode == "hold" and form.tool is not None and form.tool.name == "transfer"  # the worker's tool
    head = form.head.value
    assert "Asked by <b>worker</b>" in head and "(via <b>manager</b>)" in head
    form.approve_button.click()
    done = await view.task  # type: ignore[misc]
    assert done is not None and done.finish_reason == "stop"
    assert [line["ref"] for line in read_ledger(ledger)] == ["t1"]
    # the record of the answer: who asked, approved, and no nested answer shown as a value
    record = html_of(view)
    assert "Asked by <b>worker</b>" in record and "Subagent" not in record


async def test_deny_with_a_reason_reaches_the_sub_agents_model(tmp_path: Path) -> None:
    view, _, ledger = await paused(tmp_path)
    (form,) = view.forms
    form.reason.widget.value = "not today"  # type: ignore[union-attr]
    form.deny_button.click()
    done = await view.task  # type: ignore[misc]
    assert done is not None and "not today" in done.text and read_ledger(ledger) == []


async def test_the_static_rendering_shows_the_sub_agents_question_escaped(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    lead, _, _ = make_agents(nba.InMemorySessionStore(), ledger)
    text = directive(
        ask("worker", "w1", transfer_call("t1", 5) | {"input": {"amount": 5, "to": "<script>x</script>"}})
    )
    res = await lead.chat().send(text)
    bundle = response_bundle(res)
    assert "Asked by <b>worker</b>" in bundle["text/html"]
    assert "<script>x" not in bundle["text/html"] and "&lt;script&gt;x" in bundle["text/html"]
    assert "Asked by sub-agent worker: Transfer (needs approval)" in bundle["text/plain"]
