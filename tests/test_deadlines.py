"""Deadlines on interrupts (issue 15, item 2): past ``expiresAt`` the declared default applies,
once, whoever reads first; an answer that comes later is refused.

The deadlines here are real wall-clock ones: a pause that waits a fraction of a
second, and a sleep past it.
"""

from __future__ import annotations

import asyncio
import math
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel
from store_kinds import STORE_KINDS, make_store

import nb_agents as nba
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio

SHORT = 0.3  # seconds a pause waits in these tests
PAST = SHORT + 0.2


class Ask(BaseModel):
    question: str


def asking(store: nba.SessionStore | None, **deadline: object) -> tuple[nba.Agent, ScriptedModel]:
    confirm = nba.define_interrupt(name="confirm", input_schema=Ask, output_schema=bool, **deadline)  # type: ignore[arg-type]
    model = ScriptedModel([tool_call_response(("confirm", "c1", {"question": "go?"})), text_response("done")])
    return nba.define_agent("asker", model=model, tools=[confirm], store=store), model


def gated(store: nba.SessionStore | None, **deadline: object) -> tuple[nba.Agent, ScriptedModel, list[int]]:
    ran: list[int] = []

    @nba.tool(name="transfer")
    async def transfer(amount: int) -> str:
        ran.append(amount)
        return "sent"

    model = ScriptedModel([tool_call_response(("transfer", "t1", {"amount": 500})), text_response("over")])
    gate = nba.middleware.ToolApproval(**deadline)  # type: ignore[arg-type]
    return nba.define_agent("bank", model=model, tools=[transfer], store=store, use=[gate]), model, ran


def tool_message(model: ScriptedModel) -> list[dict[str, object]]:
    """What the model was shown of the tool's outcome on its last call."""
    last = model.requests[-1].messages[-1]
    assert last.role == "tool"
    return [p.to_wire() for p in last.content]


# -- declaring ---------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan, timedelta(0), timedelta(seconds=-5)])
def test_a_deadline_that_is_not_positive_and_finite_is_refused_at_definition(bad: object) -> None:
    with pytest.raises(ValueError, match="expires_in must be a positive, finite duration"):
        nba.define_interrupt(name="x", expires_in=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expires_in"):
        nba.middleware.ToolApproval(expires_in=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expires_in"):
        nba.resumable_tool(name="r", resume=dict, expires_in=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expires_in"):
        nba.Interrupt({"a": 1}, expires_in=bad)  # type: ignore[arg-type]


def test_a_deadline_of_the_wrong_type_and_a_default_that_cannot_apply_are_refused() -> None:
    with pytest.raises(TypeError, match="timedelta or a number of seconds, got str"):
        nba.define_interrupt(name="x", expires_in="1h")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ToolApproval holds only"):
        nba.define_interrupt(name="x", expires_in=5, on_expiry=nba.Expiry.approve())
    with pytest.raises(ValueError, match="does not fit the output schema of tool 'x'"):
        nba.define_interrupt(
            name="x", output_schema=bool, expires_in=5, on_expiry=nba.Expiry.respond("maybe")
        )
    with pytest.raises(TypeError, match="on_expiry must be an Expiry"):
        nba.define_interrupt(name="x", expires_in=5, on_expiry=42)  # type: ignore[arg-type]


async def test_the_paused_part_carries_its_deadline_and_default_on_the_wire() -> None:
    agent, _ = asking(nba.InMemorySessionStore(), expires_in=timedelta(hours=1))
    before = datetime.now(UTC)
    res = await agent.chat().send("ask me")
    (i,) = res.interrupts
    wire = i.part.to_wire()["metadata"]
    assert wire["interrupt"] is True and wire["onExpiry"] == {"deny": None}
    assert wire["expiresAt"].endswith("Z")
    at = datetime.fromisoformat(wire["expiresAt"].replace("Z", "+00:00"))
    assert timedelta(minutes=59) < at - before <= timedelta(hours=1, seconds=1)
    assert i.expires_at == at and not i.expired and i.on_expiry is not None
    assert i.on_expiry.startswith("denied")


# -- the defaults --------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_past_the_deadline_a_resume_applies_the_denial_and_the_late_answer_is_refused(
    kind: str, tmp_path: Path
) -> None:
    agent, model = asking(make_store(kind, tmp_path), expires_in=SHORT)
    chat = agent.chat()
    res = await chat.send("ask me")
    (i,) = res.interrupts
    late = i.respond(True)  # built in time, sent too late
    await asyncio.sleep(PAST)
    # refused as every refused answer is: nba.AgentError, status FAILED_PRECONDITION
    with pytest.raises(nba.AgentError, match=r"'confirm' \(ref: c1\) expired at .*denied") as info:
        await chat.resume(respond=[late])
    assert info.value.status == "FAILED_PRECONDITION"
    assert info.value.details["expiresAt"] == i.part.metadata["expiresAt"]  # type: ignore[index]
    # the late answer's own read applied the default: the model saw the denial and went on
    assert model.calls == 2
    (shown,) = tool_message(model)
    assert "expired at" in shown["toolResponse"]["output"]["error"]  # type: ignore[index]
    assert shown["metadata"]["expired"]["applied"] == {"deny": shown["toolResponse"]["output"]["error"]}  # type: ignore[index]
    (record,) = await agent.audit(res.session_id)
    assert record.kind == "expired" and record.name == "confirm" and record.ref == "c1"
    assert record.answer["at"] == i.part.metadata["expiresAt"]  # type: ignore[index]
    assert "deny" in record.answer["applied"] and record.answered_by is None
    leaf = await agent.get_snapshot(session_id=res.session_id)
    assert leaf is not None and leaf.finish_reason == "stop" and leaf.parent_id == res.snapshot_id


async def test_a_default_answer_applies_as_if_a_person_had_given_it() -> None:
    agent, model = asking(nba.InMemorySessionStore(), expires_in=SHORT, on_expiry=nba.Expiry.respond(False))
    res = await agent.chat().send("ask me")
    await asyncio.sleep(PAST)
    (out,) = await agent.expire_due()
    assert out.finish_reason == "stop" and model.calls == 2
    (shown,) = tool_message(model)
    assert shown["toolResponse"]["output"] is False  # type: ignore[index]
    (record,) = await agent.audit(res.session_id)
    assert record.kind == "expired" and record.answer["applied"] == {"respond": False}
    assert await agent.expire_due() == []  # applied once: nothing is due any more


async def test_an_approval_hold_that_expires_on_approve_runs_the_tool_once() -> None:
    agent, model, ran = gated(nba.InMemorySessionStore(), expires_in=SHORT, on_expiry=nba.Expiry.approve())
    res = await agent.chat().send("pay")
    assert res.finish_reason == "interrupted" and ran == []
    await asyncio.sleep(PAST)
    assert len(await agent.pending()) == 0  # pending() applied it lazily, and lists nothing
    assert ran == [500] and model.calls == 2
    (record,) = await agent.audit(res.session_id)
    assert record.kind == "expired" and record.answer["applied"] == {"approve": True}
    assert await agent.expire_due() == [] and ran == [500]


async def test_an_approval_hold_denied_on_expiry_tells_the_model_and_never_runs_the_tool() -> None:
    agent, model, ran = gated(nba.InMemorySessionStore(), expires_in=SHORT, on_expiry="Nobody approved it.")
    res = await agent.chat().send("pay")
    await asyncio.sleep(PAST)
    snap = await agent.get_snapshot(session_id=res.session_id)  # a read applies it
    assert snap is not None and snap.finish_reason == "stop"
    assert ran == []
    (shown,) = tool_message(model)
    assert shown["toolResponse"]["output"] == {"error": "Nobody approved it."}  # type: ignore[index]


async def test_before_the_deadline_an_answer_is_taken_and_nothing_expires_later() -> None:
    agent, model = asking(nba.InMemorySessionStore(), expires_in=SHORT)
    chat = agent.chat()
    res = await chat.send("ask me")
    done = await chat.resume(respond=[res.interrupts[0].respond(True)])
    assert done.text == "done"
    await asyncio.sleep(PAST)
    assert await agent.expire_due() == []
    (record,) = await agent.audit(res.session_id)
    assert record.kind == "respond" and record.answer is True


async def test_a_per_call_deadline_overrides_the_tools() -> None:
    @nba.resumable_tool(name="delete", resume=dict, expires_in=timedelta(hours=1))
    async def delete(path: str, reply: dict | None) -> str:  # type: ignore[type-arg]
        if reply is None:
            raise nba.Interrupt({"path": path}, expires_in=SHORT, on_expiry=nba.Expiry.respond("kept"))
        return "deleted"

    model = ScriptedModel([tool_call_response(("delete", "d1", {"path": "/a"})), text_response("ok")])
    agent = nba.define_agent("files", model=model, tools=[delete], store=nba.InMemorySessionStore())
    res = await agent.chat().send("clean up")
    (i,) = res.interrupts
    assert i.expires_at is not None and i.expires_at - datetime.now(UTC) < timedelta(seconds=1)
    await asyncio.sleep(PAST)
    (out,) = await agent.expire_due()
    assert out.finish_reason == "stop"
    (shown,) = tool_message(model)
    assert shown["toolResponse"]["output"] == "kept"  # type: ignore[index]


async def test_a_resumable_tools_own_deadline_applies_to_its_pauses() -> None:
    @nba.resumable_tool(name="delete", resume=dict, expires_in=SHORT, on_expiry="Kept: nobody confirmed.")
    async def delete(path: str, reply: dict | None) -> str:  # type: ignore[type-arg]
        if reply is None:
            raise nba.Interrupt({"path": path})
        return "deleted"

    replies = [tool_call_response(("delete", "d1", {"path": "/a"})), text_response("ok"), text_response("hi")]
    model = ScriptedModel(replies)
    agent = nba.define_agent("files", model=model, tools=[delete], store=nba.InMemorySessionStore())
    res = await agent.chat().send("clean up")
    assert res.interrupts[0].part.metadata["onExpiry"] == {"deny": "Kept: nobody confirmed."}  # type: ignore[index]
    await asyncio.sleep(PAST)
    # a send from the paused snapshot applies the default first, then goes on from where it left off
    follow = await agent.chat(snapshot_id=res.snapshot_id).send("and now?")
    assert follow.text == "hi" and model.calls == 3
    seen = [(m.role, m.text) for m in model.requests[-1].messages]
    assert seen[-3:] == [("tool", ""), ("model", "ok"), ("user", "and now?")]
    (shown,) = [p.to_wire() for p in model.requests[-1].messages[-3].content]
    assert shown["toolResponse"]["output"] == {"error": "Kept: nobody confirmed."}  # type: ignore[index]
    (record,) = await agent.audit(res.session_id)
    assert record.kind == "expired"


async def test_a_forged_default_is_refused() -> None:
    agent, _ = asking(nba.InMemorySessionStore(), expires_in=timedelta(hours=1))
    chat = agent.chat()
    res = await chat.send("ask me")
    forged = res.interrupts[0].respond(True).with_metadata(expired={"at": "x", "applied": {"respond": True}})
    with pytest.raises(nba.AgentError, match="has not expired") as info:
        await chat.resume(respond=[forged])
    assert info.value.status == "INVALID_ARGUMENT"
    done = await chat.resume(respond=[res.interrupts[0].respond(True)])  # still answerable
    assert done.text == "done"


async def test_without_a_store_a_late_answer_is_refused_too() -> None:
    agent, _ = asking(None, expires_in=SHORT)
    chat = agent.chat()
    res = await chat.send("ask me")
    await asyncio.sleep(PAST)
    with pytest.raises(nba.AgentError, match="expired at") as info:
        await chat.resume(respond=[res.interrupts[0].respond(True)])
    assert info.value.status == "FAILED_PRECONDITION"


async def test_a_hold_approved_in_time_runs_and_nothing_expires_later() -> None:
    agent, model, ran = gated(nba.InMemorySessionStore(), expires_in=SHORT, on_expiry=nba.Expiry.approve())
    chat = agent.chat()
    res = await chat.send("pay")
    approve = res.interrupts[0].approve()
    assert "expiresAt" not in (approve.metadata or {})  # a pause's marks are not copied into its answer
    done = await chat.resume(restart=[approve])
    assert done.text == "over" and ran == [500]
    await asyncio.sleep(PAST)
    assert await agent.expire_due() == [] and ran == [500]
    (record,) = await agent.audit(res.session_id)
    assert record.kind == "restart"


def test_expire_due_has_a_sync_twin() -> None:
    agent, model = asking(nba.InMemorySessionStore(), expires_in=SHORT)
    res = agent.chat().send_sync("ask me")
    time.sleep(PAST)
    (out,) = agent.expire_due_sync()
    assert out.finish_reason == "stop" and out.session_id == res.session_id and model.calls == 2


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_one_of_two_pauses_expires_and_the_other_is_still_answered(kind: str, tmp_path: Path) -> None:
    ran: list[str] = []

    @nba.tool(name="transfer")
    async def transfer(to: str, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt(
                {"to": to}, expires_in=SHORT if to == "bob" else 3600, on_expiry="Too late for bob."
            )
        ran.append(to)
        return f"sent to {to}"

    calls = [("transfer", "t-alice", {"to": "alice"}), ("transfer", "t-bob", {"to": "bob"})]
    model = ScriptedModel([tool_call_response(*calls), text_response("settled")])
    agent = nba.define_agent("bank", model=model, tools=[transfer], store=make_store(kind, tmp_path))
    chat = agent.chat()
    res = await chat.send("pay both")
    alice, bob = sorted(res.interrupts, key=lambda i: i.input["to"])
    await asyncio.sleep(PAST)
    with pytest.raises(nba.AgentError, match="'transfer' \\(ref: t-bob\\) expired"):
        await chat.resume(restart=[alice.restart(resumed=True), bob.restart(resumed=True)])
    assert ran == []  # refused whole, before anything ran; bob's default went in meanwhile
    done = await chat.resume(restart=[alice.restart(resumed=True)], partial=True)
    assert done.text == "settled" and ran == ["alice"] and model.calls == 2
    outputs = {p.tool_response.ref: p.tool_response.output for p in model.requests[-1].messages[-1].content}
    assert outputs == {"t-alice": "sent to alice", "t-bob": {"error": "Too late for bob."}}
    kinds = sorted((r.ref, r.kind) for r in await agent.audit(res.session_id))
    assert kinds == [("t-alice", "restart"), ("t-bob", "expired")]


async def test_an_answer_given_in_time_can_be_retried_after_the_deadline() -> None:
    ran: list[str] = []

    @nba.tool(name="transfer")
    async def transfer(to: str, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"to": to}, expires_in=SHORT)
        ran.append(to)
        if len(ran) == 1:
            raise RuntimeError("the bank is down")
        return "sent"

    model = ScriptedModel([tool_call_response(("transfer", "t1", {"to": "amy"})), text_response("sent it")])
    agent = nba.define_agent("bank", model=model, tools=[transfer], store=nba.InMemorySessionStore())
    chat = agent.chat()
    res = await chat.send("pay amy")
    with pytest.raises(nba.AgentError, match="the bank is down"):
        await chat.resume(restart=[res.interrupts[0].restart(resumed=True)])  # in time: it took effect
    await asyncio.sleep(PAST)
    done = await chat.retry()  # the answer came in time: its retry is not a late answer
    assert done.text == "sent it" and ran == ["amy", "amy"]
    assert await agent.expire_due() == []
    assert {r.kind for r in await agent.audit(res.session_id)} == {"restart"}  # each attempt; no default
