"""Approval rules: static allow/deny rules of ToolApproval, and per-session rules from approve(always=True).

Per-session rules are data kept with the session's snapshots: they survive a
new Agent object on a new store object of the same database (a kernel
restart), they are listed, revoked and audited on every store kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from store_kinds import STORE_KINDS, make_store

import nb_agents as nba
from nb_agents.middleware import ToolApproval
from nb_agents.testing import FunctionModel
from nb_agents.types import GenerateRequest

pytestmark = pytest.mark.anyio


def model_fn(request: GenerateRequest) -> Any:
    """Call the tool the user names ("readTable sales": readTable of sales), then say what it said."""
    last = request.messages[-1]
    if last.role == "tool":
        out = last.content[0].tool_response.output  # type: ignore[union-attr]
        return f"tool said: {out}"
    name, _, arg = last.text.partition(" ")
    ref = f"c{len(request.messages)}"
    return {
        "message": {
            "role": "model",
            "content": [{"toolRequest": {"name": name, "ref": ref, "input": {"table": arg}}}],
        },
        "finishReason": "stop",
    }


class Tables:
    """Tools that record every run."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []

        @nba.tool(name="readTable")
        async def read_table(table: str) -> str:
            self.ran.append(("readTable", table))
            return f"rows of {table}"

        @nba.tool(name="dropTable")
        async def drop_table(table: str) -> str:
            self.ran.append(("dropTable", table))
            return f"dropped {table}"

        self.tools = [read_table, drop_table]


def agent_on(store: nba.SessionStore | None, tables: Tables, **gate: Any) -> nba.Agent:
    return nba.define_agent(
        "tables", model=FunctionModel(model_fn), tools=tables.tools, store=store, use=[ToolApproval(**gate)]
    )


# -- static rules ---------------------------------------------------------------------------------
async def test_allow_and_deny_rules_answer_calls_without_a_pause() -> None:
    tables = Tables()
    store = nba.InMemorySessionStore()
    agent = agent_on(
        store,
        tables,
        rules=[
            nba.ApprovalRule("readTable"),
            nba.ApprovalRule("dropTable", action="deny", message="Never drop."),
        ],
    )
    chat = agent.chat()
    res = await chat.send("readTable sales")
    assert res.finish_reason == "stop" and res.text == "tool said: rows of sales"
    res = await chat.send("dropTable sales")
    assert res.finish_reason == "stop" and res.text == "tool said: {'error': 'Never drop.'}"
    assert tables.ran == [("readTable", "sales")]  # the denied call never ran
    tool_msgs = [m for m in res.messages if m.role == "tool"]
    assert [m.content[0].metadata for m in tool_msgs] == [
        {"approvedBy": {"rule": "allow:readTable"}},
        {"deniedBy": {"rule": "deny:dropTable"}},
    ]
    trail = await agent.audit(chat.session_id or "")
    assert [(r.kind, r.name, r.ref, r.answer) for r in trail] == [
        ("rule", "readTable", "c1", {"rule": "allow:readTable", "action": "allow"}),
        ("rule", "dropTable", "c5", {"rule": "deny:dropTable", "action": "deny"}),
    ]


async def test_a_predicate_on_the_arguments_chooses_the_rule() -> None:
    tables = Tables()
    agent = agent_on(
        nba.InMemorySessionStore(),
        tables,
        rules=[
            nba.ApprovalRule("readTable", when=lambda inp: inp["table"].startswith("public_")),
            nba.ApprovalRule("readTable", when=lambda inp: inp["table"] == "secrets", action="deny"),
            nba.ApprovalRule("readTable", when=lambda inp: inp["missing"] == 1),  # raises: does not match
        ],
    )
    chat = agent.chat()
    assert (await chat.send("readTable public_sales")).finish_reason == "stop"
    denied = await chat.send("readTable secrets")
    assert (
        denied.text
        == "tool said: {'error': \"The call to 'readTable' was denied by rule 'deny:readTable'.\"}"
    )
    held = await chat.send("readTable payroll")  # no rule answers: a person is asked
    assert held.finish_reason == "interrupted"
    assert [i.name for i in held.interrupts] == ["readTable"]
    assert tables.ran == [("readTable", "public_sales")]
    assert [r.answer["rule"] for r in await agent.audit(chat.session_id or "")] == [
        "allow:readTable",
        "deny:readTable",
    ]


async def test_rules_come_before_the_allowlist_and_the_first_match_answers() -> None:
    tables = Tables()
    agent = agent_on(
        None,
        tables,
        allowed_tools=["dropTable"],
        rules=[nba.ApprovalRule("*", action="deny", id="freeze"), nba.ApprovalRule("dropTable")],
    )
    res = await agent.chat().send("dropTable t")
    assert res.text == "tool said: {'error': \"The call to 'dropTable' was denied by rule 'freeze'.\"}"
    assert tables.ran == []


def test_bad_rules_are_refused_when_they_are_made() -> None:
    with pytest.raises(ValueError, match="action must be 'allow' or 'deny', got 'maybe'"):
        nba.ApprovalRule("readTable", action="maybe")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="when must be a callable .* got str"):
        nba.ApprovalRule("readTable", when="table == 'x'")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tool must be a tool name"):
        nba.ApprovalRule("")
    with pytest.raises(ValueError, match="an 'allow' rule takes none"):
        nba.ApprovalRule("readTable", message="hi")
    with pytest.raises(TypeError, match="rules must be ApprovalRule values, got dict"):
        ToolApproval(rules=[{"tool": "readTable"}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="two approval rules have the id 'mine'"):
        ToolApproval(rules=[nba.ApprovalRule("a", id="mine"), nba.ApprovalRule("b", id="mine")])
    with pytest.raises(TypeError, match="allowed_tools must be a list"):
        ToolApproval(allowed_tools="readTable")
    gate = ToolApproval(rules=[nba.ApprovalRule("a"), nba.ApprovalRule("a", when=lambda i: True)])
    assert [r.id for r in gate.rules] == ["allow:a", "allow:a#2"]
    rule = nba.ApprovalRule("a")
    with pytest.raises(AttributeError):
        rule.tool = "b"  # type: ignore[misc]  # frozen


# -- per-session rules -------------------------------------------------------------------------------
async def _approve_always(agent: nba.Agent) -> nba.Chat:
    chat = agent.chat()
    held = await chat.send("readTable sales")
    assert held.finish_reason == "interrupted"
    hold = nba.ApprovalHold.claim(held.interrupts[0].part)
    assert hold is not None
    res = await chat.resume(restart=[hold.approve(always=True)], metadata={"answeredBy": "ana"})
    assert res.text == "tool said: rows of sales"
    return chat


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_approve_always_makes_a_rule_that_answers_later_calls(kind: str, tmp_path: Path) -> None:
    tables = Tables()
    agent = agent_on(make_store(kind, tmp_path), tables)
    chat = await _approve_always(agent)
    again = await chat.send("readTable costs")
    assert again.finish_reason == "stop" and again.text == "tool said: rows of costs"
    other = await chat.send("dropTable costs")  # the rule is for this tool only
    assert other.finish_reason == "interrupted"
    assert tables.ran == [("readTable", "sales"), ("readTable", "costs")]
    sid = chat.session_id or ""
    [rule] = await agent.rules(sid)
    assert (rule.tool, rule.action, rule.created_by, rule.ref) == ("readTable", "allow", "ana", "c1")
    assert rule.id.startswith("always-") and rule.snapshot_id and rule.created_at
    tool_msg = [m for m in again.messages if m.role == "tool"][-1]
    assert tool_msg.content[0].metadata == {"approvedBy": {"rule": rule.id}}
    trail = [(r.kind, r.name, r.answered_by, r.answer) for r in await agent.audit(sid)]
    assert trail == [
        ("restart", "readTable", "ana", {"toolApproved": True, "always": True}),
        ("rule-created", "readTable", "ana", {"rule": rule.id, "action": "allow"}),
        ("rule", "readTable", None, {"rule": rule.id, "action": "allow"}),
    ]
    # another conversation has no rule
    assert (await agent.chat().send("readTable sales")).finish_reason == "interrupted"


def _reopen(kind: str, store: nba.SessionStore) -> nba.SessionStore:
    """A second store object on the same data (what a restarted kernel opens)."""
    if kind == "file":
        return nba.FileSessionStore(store.directory)  # type: ignore[attr-defined]
    if kind == "sqlite":
        return nba.SqliteSessionStore(store.path)  # type: ignore[attr-defined]
    from nb_agents.stores.postgres import PostgresSessionStore

    return PostgresSessionStore(store._dsn)  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["file", "sqlite", "postgres"])
async def test_a_session_rule_survives_a_kernel_restart_and_revoking_it_holds_again(
    kind: str, tmp_path: Path
) -> None:
    first = make_store(kind, tmp_path)
    chat = await _approve_always(agent_on(first, Tables()))
    sid = chat.session_id or ""
    close = getattr(first, "close", None)
    if close is not None:
        close()

    tables = Tables()  # the "restarted kernel": new tools, agent and store objects
    second = _reopen(kind, first)
    agent = agent_on(second, tables)
    try:
        chat = agent.chat(session_id=sid)
        [rule] = await chat.rules()
        res = await chat.send("readTable costs")
        assert res.finish_reason == "stop" and tables.ran == [("readTable", "costs")]
        revoked = await chat.revoke_rule(rule.id)
        assert revoked == rule and list(await agent.rules(sid)) == []
        held = await chat.send("readTable costs")
        assert held.finish_reason == "interrupted"
        kinds = [r.kind for r in await agent.audit(sid)]
        assert kinds == ["restart", "rule-created", "rule", "rule-revoked"]
        with pytest.raises(nba.NotFoundError, match=f"has no approval rule '{rule.id}'"):
            await agent.revoke_rule(sid, rule.id)
    finally:
        close = getattr(second, "close", None)
        if close is not None:
            close()


async def test_an_always_answer_sent_twice_stores_one_rule(tmp_path: Path) -> None:
    store = nba.SqliteSessionStore(tmp_path / "rules.db")
    tables = Tables()
    agent = agent_on(store, tables)
    chat = agent.chat()
    held = await chat.send("readTable sales")
    answer = nba.ToolResume(restart=[held.interrupts[0].approve(always=True)])
    init = nba.AgentInit(snapshot_id=held.snapshot_id)
    one = await agent.invoke(nba.AgentInput(resume=answer), init)
    two = await agent.invoke(nba.AgentInput(resume=answer), init)  # a retried request: replayed
    assert one.snapshot_id == two.snapshot_id and tables.ran == [("readTable", "sales")]
    sid = held.session_id or ""
    assert len(await agent.rules(sid)) == 1
    assert [r.kind for r in await agent.audit(sid)] == ["restart", "rule-created"]
    store.close()


async def test_always_without_a_store_is_refused_and_leaves_the_call_answerable() -> None:
    tables = Tables()
    agent = agent_on(None, tables)
    chat = agent.chat()
    held = await chat.send("readTable sales")
    with pytest.raises(nba.AgentError, match=r"approve\(always=True\) makes a per-session rule"):
        await chat.resume(restart=[held.interrupts[0].approve(always=True)])
    assert tables.ran == []
    res = await chat.resume(restart=[held.interrupts[0].approve()])
    assert res.text == "tool said: rows of sales"


def test_always_must_be_a_bool() -> None:
    part = nba.Part.model_validate(
        {
            "toolRequest": {"name": "x", "input": {}},
            "metadata": {"interrupt": {"message": "Tool not in approved list: x"}},
        }
    )
    with pytest.raises(TypeError, match="takes True or False"):
        nba.AgentInterrupt(part).approve(always="yes")  # type: ignore[arg-type]


def test_sync_twins_of_the_rule_verbs() -> None:
    store = nba.InMemorySessionStore()
    agent = agent_on(store, Tables())
    chat = agent.chat()
    held = chat.send_sync("readTable sales")
    chat.resume_sync(restart=[held.interrupts[0].approve(always=True)])
    [rule] = chat.rules_sync()
    assert agent.rules_sync(chat.session_id or "") == [rule]
    assert agent.revoke_rule_sync(chat.session_id or "", rule.id) == rule
    assert chat.rules_sync() == []


async def test_a_rule_answered_call_beside_a_held_one_keeps_its_mark_through_the_resume() -> None:
    from helpers import text_response, tool_call_response

    from nb_agents.testing import ScriptedModel

    tables = Tables()
    model = ScriptedModel(
        [
            tool_call_response(("readTable", "a", {"table": "public"}), ("dropTable", "b", {"table": "x"})),
            text_response("done"),
        ]
    )
    agent = nba.define_agent(
        "t", model=model, tools=tables.tools, store=nba.InMemorySessionStore(),
        use=[ToolApproval(rules=[nba.ApprovalRule("readTable")])],
    )  # fmt: skip
    chat = agent.chat()
    held = await chat.send("go")
    assert [i.name for i in held.interrupts] == ["dropTable"] and tables.ran == [("readTable", "public")]
    await chat.resume(restart=[held.interrupts[0].approve()])
    tool_msg = [m for m in chat.messages if m.role == "tool"][-1]
    metas = {p.tool_response.name: p.metadata for p in tool_msg.content if p.tool_response}
    assert metas["readTable"] == {"source": "pending", "approvedBy": {"rule": "allow:readTable"}}
    assert metas["dropTable"] is None
    assert all("pendingRule" not in (p.metadata or {}) for m in chat.messages for p in m.content)


async def test_revoking_takes_effect_while_a_turn_runs_and_is_refused_for_another_principal() -> None:
    import asyncio

    gate = asyncio.Event()

    @nba.tool(name="readTable")
    async def read_table(table: str) -> str:
        await gate.wait()
        return "rows"

    agent = nba.define_agent(
        "t", model=FunctionModel(model_fn), tools=[read_table], store=nba.InMemorySessionStore(),
        use=[ToolApproval()],
    )  # fmt: skip
    ana = {"auth": {"uid": "ana"}}
    chat = agent.chat()
    held = await chat.send("readTable sales", context=ana)
    gate.set()
    await chat.resume(restart=[held.interrupts[0].approve(always=True)], context=ana)
    sid = chat.session_id or ""
    [rule] = await agent.rules(sid, context=ana)
    assert rule.created_by == "ana"
    with pytest.raises(nba.NotFoundError, match=f"Session {sid} not found"):
        await agent.revoke_rule(sid, rule.id, context={"auth": {"uid": "bob"}})
    assert list(await agent.rules(sid, context={"auth": {"uid": "bob"}})) == []
    gate.clear()
    task = await chat.detach("readTable costs", context=ana)  # runs in the background, held in the tool
    # rules are the session's, not a row's: a revoke while a turn runs is one write, and it stands
    assert (await agent.revoke_rule(sid, rule.id, context=ana)).id == rule.id
    gate.set()
    await task.wait()
    assert list(await agent.rules(sid, context=ana)) == []
    [record] = [r for r in await agent.audit(sid) if r.kind == "rule-revoked"]
    assert record.answered_by == "ana"


def _slow_tables(tables: Tables, gate: Any) -> None:
    """Add ``slowTable``, which waits for `gate` (an anyio.Event, or a delay in seconds)."""

    @nba.tool(name="slowTable")
    async def slow_table(table: str) -> str:
        if isinstance(gate, (int, float)):
            await anyio.sleep(gate)
        else:
            await gate.wait()
        tables.ran.append(("slowTable", table))
        return f"slow rows of {table}"

    tables.tools.append(slow_table)


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_a_rule_revoked_while_a_turn_runs_stays_revoked(kind: str, tmp_path: Path) -> None:
    """The running turn loaded the rule before the revoke; its row must not bring it back."""
    tables = Tables()
    release = anyio.Event()
    _slow_tables(tables, release)
    agent = agent_on(make_store(kind, tmp_path), tables, allowed_tools=["slowTable"])
    chat = await _approve_always(agent)
    sid = chat.session_id or ""
    [rule] = await agent.rules(sid)
    async with anyio.create_task_group() as tg:
        done: list[Any] = []

        async def turn() -> None:
            done.append(await agent.chat(session_id=sid).send("slowTable big"))

        tg.start_soon(turn)
        await anyio.sleep(0.3)  # the turn has loaded the session (and its rule) and waits in slowTable
        assert not done and ("slowTable", "big") not in tables.ran
        await agent.revoke_rule(sid, rule.id)
        release.set()
    assert done[0].text == "tool said: slow rows of big"
    assert list(await agent.rules(sid)) == []
    held = await agent.chat(session_id=sid).send("readTable sales")
    assert held.finish_reason == "interrupted"


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_revokes_racing_turns_that_finish_at_any_moment_stay_revoked(kind: str, tmp_path: Path) -> None:
    """A turn finishing just before, during or just after the revoke: the rule never comes back."""
    import random

    rng = random.Random(7)
    for trial in range(12):
        tables = Tables()
        delay = rng.uniform(0, 0.03)
        _slow_tables(tables, delay)
        agent = agent_on(make_store(kind, tmp_path / str(trial)), tables, allowed_tools=["slowTable"])
        chat = await _approve_always(agent)
        sid = chat.session_id or ""
        [rule] = await agent.rules(sid)
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.chat(session_id=sid).send, "slowTable big")
            await anyio.sleep(rng.uniform(0, 0.03))
            await agent.revoke_rule(sid, rule.id)
        assert list(await agent.rules(sid)) == [], (trial, delay)


async def test_a_new_session_reads_no_rules_and_a_continued_one_reads_them_live(tmp_path: Path) -> None:
    """A turn that starts a session (no id came in) has no rules to read: nobody else knows its id."""
    reads: list[str] = []

    class Counting(nba.SqliteSessionStore):
        async def get_rules(self, session_id: str) -> list[dict[str, Any]]:
            reads.append(session_id)
            return await super().get_rules(session_id)

    store = Counting(tmp_path / "rules.db")
    tables = Tables()
    agent = agent_on(store, tables)
    chat = agent.chat()
    held = await chat.send("readTable sales")
    assert held.finish_reason == "interrupted" and reads == []
    await chat.resume(restart=[held.interrupts[0].approve(always=True)])
    again = await chat.send("readTable sales")  # the same session: its rule is read, and answers
    assert again.finish_reason == "stop" and reads and set(reads) == {held.session_id}
    assert tables.ran == [("readTable", "sales"), ("readTable", "sales")]
    # a second tab on the session id reads them too
    other = agent.chat(session_id=held.session_id)
    before = len(reads)
    assert (await other.send("readTable sales")).finish_reason == "stop" and len(reads) > before
    store.close()


async def test_a_rule_made_in_a_connection_answers_its_next_turn() -> None:
    """The connection's first turn started the session; its later turns read the rules its answers made."""
    tables = Tables()
    agent = agent_on(nba.InMemorySessionStore(), tables)
    async with agent.connect() as conn:
        conn.send_text("readTable sales")
        async for _ in conn.receive():
            pass
        (item,) = (await agent.pending()).items()
        conn.send_resume(nba.ToolResume(restart=[item.interrupt.approve(always=True)]))
        async for _ in conn.receive():
            pass
        conn.send_text("readTable sales")  # the rule answers it: no pause
        async for _ in conn.receive():
            pass
        conn.close()
        out = await conn.output()
    assert out.finish_reason == "stop"
    assert tables.ran == [("readTable", "sales"), ("readTable", "sales")]
