"""`Timeline`: a turn or a session as a static timeline, from what the stores keep."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

import nb_agents as nba
from nb_agents.notebook import Timeline
from nb_agents.render.timeline import duration_words
from nb_agents.testing import FunctionModel

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from directives import directive, read_ledger, transfer_call  # noqa: E402
from store_kinds import STORE_KINDS, make_store  # noqa: E402
from subagent_app import ask, make_agents  # noqa: E402

pytestmark = pytest.mark.anyio

CLOCK = re.compile(r"\b\d{2}:\d{2}:\d{2}\b")


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_every_store_keeps_each_turns_timing(kind: str, tmp_path: Path) -> None:
    lead, _, _ = make_agents(make_store(kind, tmp_path), tmp_path / "ledger.jsonl")
    res = await lead.chat().send(directive(ask("worker", "w1", transfer_call("t1", 5))))
    row = await lead.get_snapshot(res.snapshot_id)
    assert row is not None and row.timing is not None
    assert [s[:2] for s in row.timing["steps"]] == [["m", "function"], ["t", "worker"]]
    assert row.timing["steps"][1][4:] == ["w1", "paused"]  # its ref, and an outcome that is not the usual one


async def test_a_session_shows_its_turns_the_wait_and_who_answered_with_the_sub_agents_inside(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    lead, _, _ = make_agents(nba.SqliteSessionStore(str(tmp_path / "a.db")), ledger)
    chat = lead.chat()
    res = await chat.send(directive(ask("manager", "m1", ask("worker", "w1", transfer_call("t1", 5)))))
    time.sleep(0.3)
    await chat.resume(restart=[res.interrupts[0].approve()], context={"auth": {"uid": "ana"}})
    assert len(read_ledger(ledger)) == 1
    timeline = await Timeline.aload(chat)
    first, second = timeline.turns
    assert (first.number, first.finish, second.number, second.finish) == (1, "interrupted", 2, "stop")
    assert first.wait is None and second.wait is not None
    assert second.wait.seconds is not None and second.wait.seconds >= 0.3
    assert second.wait.answers == [("manager", "Approved by ana")]
    assert [(s.kind, s.name, s.outcome) for s in first.steps] == [
        ("model", "function", "stop"),
        ("tool", "manager", "paused"),
        ("held", "manager", "waits for its sub-agent"),
    ]
    # the sub-agents' turns sit under the tool runs that ran them, two levels down
    (manager,) = first.steps[1].nested
    (worker,) = manager.steps[1].nested
    assert (manager.agent, worker.agent) == ("manager", "worker")
    assert [(s.kind, s.name) for s in worker.steps] == [("model", "function"), ("held", "transfer")]
    (manager_again,) = second.steps[0].nested
    (worker_again,) = manager_again.steps[0].nested
    assert worker_again.wait is not None and worker_again.wait.answers == [("transfer", "Approved by ana")]
    assert ("tool", "transfer", "done") in [(s.kind, s.name, s.outcome) for s in worker_again.steps]
    bundle = timeline._repr_mimebundle_()
    html, text = bundle["text/html"], bundle["text/plain"]
    assert "Waited for a person" in html and "Approved by ana" in html and "nba-timeline-wait" in html
    assert CLOCK.search(html) and " ms" in html
    assert (
        "~ waited for a person" in text
        and "manager · Turn 1:" in text
        and "worker · Turn 2: an answer" in text
    )


def test_a_turn_shows_the_wait_before_it_and_reads_in_static_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lead, _, _ = make_agents(nba.SqliteSessionStore(str(tmp_path / "a.db")), tmp_path / "ledger.jsonl")
    chat = lead.chat()
    res = chat.send_sync(directive(ask("worker", "w1", transfer_call("t1", 5))))
    out = chat.resume_sync(restart=[res.interrupts[0].deny()], metadata={"answeredBy": "lee"})
    (turn,) = Timeline(out).turns  # the constructor reads the store itself
    assert turn.number is None and turn.said == "an answer"
    assert turn.wait is not None and turn.wait.answers == [("worker", "Denied by lee")]
    monkeypatch.setenv("NB_AGENTS_STATIC", "1")
    html = Timeline(out)._repr_mimebundle_()["text/html"]
    assert "Denied by lee" in html and not CLOCK.search(html) and " ms<" not in html and " s<" not in html


async def test_model_and_tool_text_is_escaped(tmp_path: Path) -> None:
    lead, _, _ = make_agents(nba.InMemorySessionStore(), tmp_path / "ledger.jsonl")
    chat = lead.chat()
    await chat.send("<img src=x onerror=alert(1)> $x$")
    html = (await Timeline.aload(chat))._repr_mimebundle_()["text/html"]
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "tex2jax_ignore" in html


async def test_without_a_store_a_turn_has_its_steps_and_no_clock(tmp_path: Path) -> None:
    @nba.tool
    async def broken() -> str:
        """Fails."""
        raise nba.ToolFail("not today")

    def model(req: nba.GenerateRequest) -> object:
        if req.messages[-1].role == "tool":
            return "gave up"
        return {"message": {"role": "model", "content": [{"toolRequest": {"name": "broken", "ref": "b"}}]}}

    agent = nba.define_agent("solo", model=FunctionModel(model), tools=[broken])
    chat = agent.chat()
    res = await chat.send("go")
    (turn,) = (await Timeline.aload(res)).turns
    assert turn.start is None and turn.ms is not None
    assert [(s.kind, s.outcome) for s in turn.steps] == [
        ("model", "stop"),
        ("tool", "refused"),
        ("model", "stop"),
    ]
    html = Timeline(chat, turns=[turn])._repr_mimebundle_()["text/html"]
    assert "refused (the model reads why)" in html and not CLOCK.search(html)


async def test_a_cancelled_pause_shows_who_cancelled_it_in_the_wait() -> None:
    @nba.tool
    async def wire_money(amount: int) -> str:
        """Sends money (held for a person)."""
        return "sent"

    def model(req: nba.GenerateRequest) -> object:
        if req.messages[-1].role == "tool":
            return "left it"
        call = {"toolRequest": {"name": "wire_money", "ref": "w", "input": {"amount": 5}}}
        return {"message": {"role": "model", "content": [call]}}

    agent = nba.define_agent(
        "desk", model=FunctionModel(model), tools=[wire_money], store=nba.InMemorySessionStore(),
        use=[nba.middleware.ToolApproval()],
    )  # fmt: skip
    chat = agent.chat()
    res = await chat.send("go")
    await chat.resume(respond=[res.interrupts[0].cancel("not now")], metadata={"answeredBy": "bob"})
    first, second = (await Timeline.aload(chat)).turns
    assert second.wait is not None and second.wait.answers == [("wire_money", "Cancelled by bob")]


def test_durations_read_as_words() -> None:
    assert [duration_words(s) for s in (0.0004, 0.25, 3.04, 61, 3600, None)] == [
        "0 ms",
        "250 ms",
        "3.0 s",
        "1 min 1 s",
        "1 h",
        "",
    ]
