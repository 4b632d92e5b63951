"""Session behaviour on every store: exactly-once resume, pending(), audit,
resumable failed and aborted snapshots, detach, and custom state."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
import weakref
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import text_response, tool_call_response

import nb_agents as nba
from nb_agents._engine.resume import resume_digest
from nb_agents.testing import FunctionModel, ScriptedModel

pytestmark = pytest.mark.anyio


def approval_agent(store: nba.SessionStore, *responses: dict[str, Any]) -> tuple[nba.Agent, list[int]]:
    sent: list[int] = []

    @nba.tool(name="send")
    async def send_money(amount: int, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"confirm": amount})
        await asyncio.sleep(0.05)  # long enough for a racing resume to arrive
        sent.append(amount)
        return f"sent {amount}"

    model = ScriptedModel(
        list(responses) or [tool_call_response(("send", "s1", {"amount": 5})), text_response("ok")]
    )
    return nba.define_agent("payer", model=model, tools=[send_money], store=store), sent


async def test_two_concurrent_resumes_run_the_tool_once(store: nba.SessionStore) -> None:
    agent, sent = approval_agent(store)
    out = await agent.run_text("pay 5")
    part = nba.AgentInterrupt(out.interrupts()[0]).restart(resumed=True)
    inp = nba.AgentInput(resume=nba.ToolResume(restart=[part]))
    a, b = await asyncio.gather(
        agent.run(inp, snapshot_id=out.snapshot_id), agent.run(inp, snapshot_id=out.snapshot_id)
    )
    assert sent == [5]
    assert a.finish_reason == b.finish_reason == "stop"
    assert a.snapshot_id == b.snapshot_id
    assert a.message == b.message


async def test_identical_resend_returns_the_first_result_and_different_is_rejected(
    store: nba.SessionStore,
) -> None:
    agent, sent = approval_agent(store)
    chat = agent.chat()
    res = await chat.send("pay 5")
    pause = res.interrupts[0]
    first = await chat.resume(restart=[pause.restart(resumed=True)])
    again = await agent.run(
        nba.AgentInput(resume=nba.ToolResume(restart=[pause.restart(resumed=True)])),
        snapshot_id=res.snapshot_id,
    )
    assert sent == [5]
    assert again.snapshot_id == first.snapshot_id and again.message == first.message
    other = await agent.run(
        nba.AgentInput(resume=nba.ToolResume(respond=[pause.respond("no thanks")])),
        snapshot_id=res.snapshot_id,
    )
    assert other.finish_reason == "failed" and other.error is not None
    assert other.error.status == "FAILED_PRECONDITION" and "already resumed" in other.error.message
    assert sent == [5]


async def test_a_new_message_may_still_branch_from_a_resumed_snapshot(store: nba.SessionStore) -> None:
    agent, _ = approval_agent(
        store,
        tool_call_response(("send", "s1", {"amount": 5})),
        text_response("ok"),
        text_response("branched"),
    )
    out = await agent.run_text("pay 5")
    part = nba.AgentInterrupt(out.interrupts()[0]).respond("skipped")
    await agent.run(nba.AgentInput(resume=nba.ToolResume(respond=[part])), snapshot_id=out.snapshot_id)
    # answering by message instead is a branch: allowed, as in Genkit, but the
    # paused model message is no longer the latest, so this is a plain new turn
    start = await agent.get_snapshot(out.snapshot_id)
    assert start is not None and start.status == "completed"


async def test_pending_lists_paused_sessions_and_audit_records_answers(store: nba.SessionStore) -> None:
    agent, _ = approval_agent(
        store,
        tool_call_response(("send", "s1", {"amount": 5})),
        tool_call_response(("send", "s2", {"amount": 7})),
        text_response("done"),
    )
    one = await agent.run_text("pay 5", session_id="alice")
    two = await agent.run_text("pay 7", session_id="bob")
    pending = await agent.pending()
    assert sorted(p.session_id for p in pending) == ["alice", "bob"]  # type: ignore[type-var]
    alice = next(p for p in pending if p.session_id == "alice")
    assert alice.snapshot_id == one.snapshot_id
    assert [(i.name, i.ref, i.data) for i in alice.interrupts] == [("send", "s1", {"confirm": 5})]
    chat = alice.chat()
    await chat.resume(
        restart=[alice.interrupts[0].restart(resumed={"ok": True})], metadata={"answeredBy": "ana"}
    )
    assert [p.session_id for p in await agent.pending()] == ["bob"]
    records = await agent.audit("alice")
    assert len(records) == 1
    rec = records[0]
    assert (rec.name, rec.ref, rec.kind, rec.answer, rec.answered_by) == (
        "send",
        "s1",
        "restart",
        {"ok": True},
        "ana",
    )
    assert rec.snapshot_id == one.snapshot_id and rec.answered_at.endswith("Z")
    assert await agent.audit("bob") == [] and two.finish_reason == "interrupted"


async def test_failed_turn_is_resumable_by_session_id(store: nba.SessionStore) -> None:
    broken = {"on": True}

    @nba.tool(name="lookup")
    async def lookup(q: str) -> str:
        if broken["on"]:
            raise RuntimeError("database down")
        return f"found {q}"

    model = ScriptedModel(
        [
            tool_call_response(("lookup", "l1", {"q": "x"})),
            tool_call_response(("lookup", "l2", {"q": "x"})),
            text_response("found it"),
        ]
    )
    agent = nba.define_agent("looker", model=model, tools=[lookup], store=store)
    out = await agent.run_text("find x", session_id="s")
    assert out.finish_reason == "failed" and out.error is not None
    assert out.error.status == "INTERNAL" and "database down" in out.error.message
    assert "database down" in out.error.details["traceback"]
    leaf = await agent.get_snapshot(session_id="s")
    assert leaf is not None and leaf.status == "failed" and leaf.error is not None
    broken["on"] = False  # "fix the tool", then go on from where it failed
    again = await agent.run_text("try again", session_id="s")
    assert again.finish_reason == "stop" and again.message.text == "found it"  # type: ignore[union-attr]
    snap = await agent.get_snapshot(again.snapshot_id)
    assert snap is not None and snap.parent_id == leaf.snapshot_id
    assert [m.text for m in snap.state.messages if m.role == "user"] == ["find x", "try again"]  # type: ignore[union-attr]


async def test_pending_and_aborting_snapshots_are_not_resumable(store: nba.SessionStore) -> None:
    release = asyncio.Event()

    async def slow(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        await release.wait()
        return "finished"

    agent = nba.define_custom_agent("slow", slow, store=store)
    task = await agent.chat().detach("work")
    out = await agent.run_text("continue", snapshot_id=task.snapshot_id)
    assert out.finish_reason == "failed" and out.error is not None
    assert (
        out.error.status == "FAILED_PRECONDITION" and "not resumable (status: pending)" in out.error.message
    )
    release.set()
    done = await task.wait(interval=0.02, timeout=5)
    assert done.status == "completed"
    assert [m.text for m in done.state.messages] == ["work", "finished"]  # type: ignore[union-attr]


async def test_background_abort_keeps_the_last_good_state_and_resumes(store: nba.SessionStore) -> None:
    async def blocking(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        await ctx.session.update_custom(lambda c: {"step": 1})
        await ctx.abort_signal.wait()
        return "never"

    agent = nba.define_custom_agent("blocker", blocking, store=store)
    task = await agent.chat().detach("start")
    await asyncio.sleep(0.05)
    assert await task.abort() == "pending"
    snap = await task.wait(interval=0.02, timeout=5)
    assert snap.status == "aborted"
    for _ in range(100):  # the worker fills in the state it had when it stopped
        snap = await task.poll()  # type: ignore[assignment]
        if snap is not None and snap.state is not None:
            break
        await asyncio.sleep(0.02)
    assert snap is not None and snap.state is not None and snap.state.custom == {"step": 1}
    assert await task.abort() == "aborted"  # terminal: a no-op


async def test_custom_state_and_artifacts_persist(store: nba.SessionStore) -> None:
    async def counter(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        n = (ctx.session.custom or {}).get("n", 0) + 1
        await ctx.session.update_custom(lambda c: {**(c or {}), "n": n})
        await ctx.session.add_artifacts([nba.Artifact(name=f"doc{n}", parts=[nba.Part(text=str(n))])])
        return f"n={n}"

    agent = nba.define_custom_agent("counter", counter, store=store)
    chat = agent.chat()
    patches = []
    turn = chat.send_stream("one")
    async for chunk in turn:
        if chunk.custom_patch is not None:
            patches.append((chunk.custom_patch, chunk.custom))
    await turn.response
    res = await chat.send("two")
    assert res.text == "n=2" and chat.custom == {"n": 2}
    assert [a.name for a in res.artifacts] == ["doc1", "doc2"]
    assert patches == [([{"op": "replace", "path": "", "value": {"n": 1}}], {"n": 1})]
    snap = await agent.get_snapshot(res.snapshot_id)
    assert snap is not None and snap.state is not None and snap.state.custom == {"n": 2}


async def test_a_claim_whose_turn_died_is_taken_over(store: nba.SessionStore) -> None:
    agent, sent = approval_agent(store)
    out = await agent.run_text("pay 5")
    assert out.snapshot_id is not None
    part = nba.AgentInterrupt(out.interrupts()[0]).restart(resumed=True)
    inp = nba.AgentInput(resume=nba.ToolResume(restart=[part]))
    # a process claimed this resume, wrote its pending row, then died: the heartbeat went stale
    assert await store.claim_resume(out.snapshot_id, resume_digest(inp.resume), "ghost") is None  # type: ignore[arg-type]
    stale = (datetime.now(UTC) - timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    ghost = nba.SessionSnapshot(
        snapshot_id="ghost",
        session_id=out.session_id,
        parent_id=out.snapshot_id,
        created_at=stale,
        heartbeat_at=stale,
        status="pending",
    )
    await store.save_snapshot("ghost", lambda cur: ghost)
    assert (await store.get_snapshot("ghost")).status == "expired"  # type: ignore[union-attr]
    done = await agent.run(inp, snapshot_id=out.snapshot_id)
    assert done.finish_reason == "stop" and sent == [5]
    assert done.snapshot_id != "ghost"
    assert [r.child_id for r in await agent.audit(out.session_id)] == [done.snapshot_id]  # type: ignore[arg-type]


async def test_a_resume_in_flight_shows_as_pending_and_can_be_aborted(store: nba.SessionStore) -> None:
    """Aborted after its tool started: the answer took effect, so it stays answered (issue 11)."""
    started = asyncio.Event()
    runs: list[str] = []

    @nba.tool(name="wait")
    async def wait(ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt()
        runs.append(ctx.idempotency_key)
        started.set()
        await asyncio.sleep(30 if len(runs) == 1 else 0)
        return "done"

    model = ScriptedModel([tool_call_response(("wait", "w1", {})), text_response("ok")])
    agent = nba.define_agent("waiter", model=model, tools=[wait], store=store)
    out = await agent.run_text("go")
    part = nba.AgentInterrupt(out.interrupts()[0]).restart(resumed=True)
    answer = nba.AgentInput(resume=nba.ToolResume(restart=[part]))
    running = asyncio.ensure_future(agent.run(answer, snapshot_id=out.snapshot_id))
    await asyncio.wait_for(started.wait(), 5)
    leaf = await agent.get_snapshot(session_id=out.session_id)
    assert leaf is not None and leaf.status == "pending" and leaf.parent_id == out.snapshot_id
    assert await agent.abort(leaf.snapshot_id) == "pending"
    res = await asyncio.wait_for(running, 5)
    assert res.finish_reason == "aborted"
    # the answer was acted on: audited, and the aborted attempt records what its tool did
    assert [r.kind for r in await agent.audit(out.session_id)] == ["restart"]  # type: ignore[arg-type]
    aborted = await agent.get_snapshot(leaf.snapshot_id)
    assert aborted is not None and aborted.status == "aborted"
    # the same answer again: the recorded outcome, no second run; another answer: refused
    again = await agent.run(answer, snapshot_id=out.snapshot_id)
    assert again.finish_reason == "aborted" and len(runs) == 1
    other = nba.AgentInput(
        resume=nba.ToolResume(respond=[nba.AgentInterrupt(out.interrupts()[0]).respond("x")])
    )
    refused = await agent.run(other, snapshot_id=out.snapshot_id)
    assert refused.finish_reason == "failed" and "already resumed" in refused.error.message  # type: ignore[union-attr]
    # an explicit retry runs one more attempt, with the same idempotency key
    retry = nba.AgentInput(resume=answer.resume, retry=True)
    done = await agent.run(retry, snapshot_id=out.snapshot_id)
    assert done.finish_reason == "stop", done.error
    assert len(runs) == 2 and runs[0] == runs[1]


async def test_a_resume_aborted_before_any_tool_started_leaves_the_interrupt_answerable(
    store: nba.SessionStore,
) -> None:
    thinking = asyncio.Event()

    async def slow(req: nba.GenerateRequest) -> Any:
        if req.messages[-1].role == "tool":
            thinking.set()
            await asyncio.sleep(30)
        return {
            "message": {
                "role": "model",
                "content": [{"toolRequest": {"name": "ask", "ref": "a1", "input": {}}}],
            }
        }

    ask = nba.define_interrupt(name="ask", description="a question")
    agent = nba.define_agent("asker", model=FunctionModel(slow), tools=[ask], store=store)
    out = await agent.run_text("go")
    answer = nba.AgentInput(
        resume=nba.ToolResume(respond=[nba.AgentInterrupt(out.interrupts()[0]).respond({"a": 1})])
    )
    running = asyncio.ensure_future(agent.run(answer, snapshot_id=out.snapshot_id))
    await asyncio.wait_for(thinking.wait(), 5)  # the model thinks; no tool ran (a respond runs none)
    leaf = await agent.get_snapshot(session_id=out.session_id)
    assert leaf is not None and await agent.abort(leaf.snapshot_id) == "pending"
    assert (await asyncio.wait_for(running, 5)).finish_reason == "aborted"
    assert await agent.audit(out.session_id) == []  # type: ignore[arg-type]  # nothing took effect
    other = nba.AgentInput(
        resume=nba.ToolResume(respond=[nba.AgentInterrupt(out.interrupts()[0]).respond({"a": 2})])
    )
    again = asyncio.ensure_future(agent.run(other, snapshot_id=out.snapshot_id))  # answerable again
    await asyncio.sleep(0.2)
    assert not again.done() or again.result().finish_reason != "failed"
    again.cancel()


def test_two_threads_resume_the_same_interrupt_once(store: nba.SessionStore) -> None:
    agent, sent = approval_agent(store)
    out = asyncio.run(agent.run_text("pay 5"))
    part = nba.AgentInterrupt(out.interrupts()[0]).restart(resumed=True)
    inp = nba.AgentInput(resume=nba.ToolResume(restart=[part]))
    results: list[nba.AgentOutput] = []
    barrier = threading.Barrier(2)

    def answer() -> None:  # each thread runs its own event loop
        barrier.wait()
        results.append(asyncio.run(agent.run(inp, snapshot_id=out.snapshot_id)))

    threads = [threading.Thread(target=answer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sent == [5]
    assert [r.finish_reason for r in results] == ["stop", "stop"]
    assert results[0].snapshot_id == results[1].snapshot_id


async def test_500_agent_turns_on_sqlite_grow_the_file_linearly(tmp_path: Path) -> None:
    from nb_agents.stores.sqlite import SqliteSessionStore

    path = tmp_path / "long.db"
    body = "x" * 150
    agent = nba.define_agent(
        "long",
        model=FunctionModel(lambda req: f"reply {len(req.messages)} {body}"),
        store=SqliteSessionStore(path),
    )
    chat = agent.chat()
    sizes: dict[int, int] = {}
    for turn in range(1, 501):
        await chat.send(f"message {turn} {body}")
        if turn in (250, 500):
            sizes[turn] = disk_size(path)
    per_turn = (sizes[500] - sizes[250]) / 250
    print(f"\n500 agent turns on SQLite: {sizes[500]} B in all, {per_turn:.0f} B per turn")
    # whole-history copies would make the second 250 turns cost ~3x the first 250
    assert sizes[500] < 2.3 * sizes[250]
    snap = await agent.get_snapshot(chat.snapshot_id)
    assert snap is not None and snap.state is not None and len(snap.state.messages) == 1000


def disk_size(path: Path) -> int:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    wal = Path(f"{path}-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


async def test_a_call_that_returned_leaves_its_invocation_to_reference_counting(
    store: nba.SessionStore,
) -> None:
    # the session held the invocation's emitter and the invocation the session: every call left
    # its invocation (with its queue, events and session, ~50 objects) to the cycle collector;
    # the turn's end now unbinds the session, so returning frees it
    from nb_agents._engine.invocation import Invocation

    agent, sent = approval_agent(store)
    chat = agent.chat()
    gc.collect()
    gc.disable()
    try:
        paused = await chat.send("pay 5")
        after_send = [o for o in gc.get_objects() if type(o) is Invocation]
        await chat.resume(restart=[paused.interrupts[0].restart(resumed=True)])
        after_resume = [o for o in gc.get_objects() if type(o) is Invocation]
    finally:
        gc.enable()
    assert sent == [5]
    assert after_send == [] and after_resume == []


async def test_a_chat_dropped_after_its_turns_is_freed_by_reference_counting(
    store: nba.SessionStore,
) -> None:
    # the response holds its chat (a form resumes through it) and the chat its latest response:
    # held both ways, a chat per conversation left both to the cycle collector on every turn
    agent, sent = approval_agent(store)
    gc.collect()
    gc.disable()
    try:
        chat = agent.chat()
        paused = await chat.send("pay 5")
        done = await chat.resume(restart=[paused.interrupts[0].restart(resumed=True)])
        gone = weakref.ref(chat)
        del chat, paused, done
        left = gone()
    finally:
        gc.enable()
    assert sent == [5]
    assert left is None


async def test_chat_last_is_the_response_while_held_and_the_same_again_when_not(
    store: nba.SessionStore,
) -> None:
    agent, sent = approval_agent(store)
    chat = agent.chat()
    paused = await chat.send("pay 5")
    assert chat.last is paused  # the very object, while the caller holds it
    paused.messages.append(nba.Message(role="user", content=[nba.Part(text="a note of the caller's")]))
    ref, held = paused.interrupts[0].ref, list(paused.messages)
    del paused
    again = chat.last  # nothing held it: made again from what the turn returned
    assert again is not None and again.chat is chat and chat.last is again
    assert again.finish_reason == "interrupted" and [i.ref for i in again.interrupts] == [ref]
    assert again.messages == held and again.snapshot_id == chat.snapshot_id
    done = await chat.resume(restart=[again.interrupts[0].restart(resumed=True)])
    assert sent == [5] and chat.last is done and done.text
    chat.last = None
    assert chat.last is None
    assert "held weakly" in (type(chat).last.__doc__ or "")  # on the class: the descriptor, documented


async def test_an_answered_turn_lets_go_of_its_heartbeat_timer(store: nba.SessionStore) -> None:
    # a claimed answer's pending row is watched from a poll interval on; the turn that ends
    # sooner cancels that timer, so nothing holds it (nor the invocation) after it returned
    agent, sent = approval_agent(store)
    chat = agent.chat()
    paused = await chat.send("pay 5")
    await chat.resume(restart=[paused.interrupts[0].restart(resumed=True)])
    assert sent == [5]
    loop = asyncio.get_running_loop()
    timers = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
    assert [h for h in timers if getattr(h._callback, "__name__", "") == "begin_watch"] == []


async def test_a_turn_nobody_streams_builds_no_chunks_and_ends_the_same() -> None:
    """`ctx.streaming` says whether anyone receives a turn's chunks: `agent.invoke` without
    `on_chunk` (a JSON request) has nobody, and a prompt agent's turn ends the same either way."""
    seen: list[bool] = []

    async def handler(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        seen.append(ctx.streaming)
        await ctx.send_chunk({"role": "model", "content": [{"text": "hi"}]})
        return "done"

    custom = nba.define_custom_agent("streams", handler)
    got: list[nba.AgentStreamChunk] = []

    async def collect(chunk: nba.AgentStreamChunk) -> None:
        got.append(chunk)

    message = nba.AgentInput.model_validate({"message": {"role": "user", "content": [{"text": "x"}]}})
    quiet = await custom.invoke(message, nba.AgentInit())
    loud = await custom.invoke(message, nba.AgentInit(), on_chunk=collect)
    assert seen == [False, True]
    assert quiet.message == loud.message and quiet.finish_reason == loud.finish_reason == "stop"
    assert [c.turn_end is not None for c in got] == [False, True]  # the handler's chunk, then the end

    @nba.tool(name="transfer")
    async def transfer(amount: int) -> str:
        raise nba.Interrupt({"details": f"send {amount}?"})

    def model(req: nba.GenerateRequest) -> dict[str, Any]:
        return tool_call_response(("transfer", "t1", {"amount": 5}))

    outputs = []
    for sink in (None, collect):
        agent = nba.define_agent("bank", model=FunctionModel(model), tools=[transfer])
        got.clear()
        outputs.append(await agent.invoke(message, nba.AgentInit(), on_chunk=sink))
    assert outputs[0].finish_reason == outputs[1].finish_reason == "interrupted"
    assert outputs[0].message == outputs[1].message and outputs[0].interrupts()
    assert got[-1].turn_end is not None and got[-1].turn_end.finish_reason == "interrupted"
    pause = got[-2].model_chunk
    assert pause is not None and pause.role == "tool" and pause.content == outputs[1].interrupts()


async def test_a_chat_send_reads_no_stream_yet_follows_the_session_it_changes() -> None:
    """A chat's `send` returns the whole response, so its turn builds no stream (`ctx.streaming`
    is False, `CallOptions.stream`), yet the custom state and artifacts the handler sets reach the
    chat, as with `send_stream`, whose turn streams and ends with its turn-end chunk."""
    seen: list[bool] = []

    async def handler(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        seen.append(ctx.streaming)
        await ctx.session.update_custom(lambda cur: {"count": (cur or {}).get("count", 0) + 1})
        await ctx.session.add_artifacts([{"name": "report", "parts": [{"text": f"v{len(seen)}"}]}])
        return "done"

    agent = nba.define_custom_agent("counts", handler, store=nba.InMemorySessionStore())
    chat = agent.chat()
    res = await chat.send("one")
    assert seen == [False] and res.text == "done"
    assert res.custom == chat.custom == {"count": 1}
    assert [a.parts[0].text for a in chat.artifacts] == ["v1"]

    turn = chat.send_stream("two")
    chunks = [c async for c in turn]
    res = await turn.response
    assert seen == [False, True]
    assert res.custom == chat.custom == {"count": 2}
    assert [a.parts[0].text for a in chat.artifacts] == ["v2"]
    assert chunks[-1].raw.turn_end is not None and chunks[-1].raw.turn_end.finish_reason == "stop"

    res = await chat.send("three")  # a send after a stream: the state carried on, not re-streamed
    assert seen == [False, True, False] and res.custom == {"count": 3}


@pytest.mark.parametrize("stored", [True, False])
async def test_plain_dicts_a_handler_puts_in_the_session_lists_are_read_as_models(stored: bool) -> None:
    """`session.messages` and `session.artifacts` are plain lists a handler may append a dict to:
    the turn's output, its stored row and the chat read them as `Message` and `Artifact`."""

    async def handler(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        ctx.session.artifacts.append({"name": "note", "parts": [{"text": "kept"}]})  # type: ignore[arg-type]
        ctx.session.messages.append({"role": "model", "content": [{"text": "aside"}]})  # type: ignore[arg-type]
        return "done"

    store = nba.InMemorySessionStore() if stored else None
    agent = nba.define_custom_agent("lists", handler, store=store)
    chat = agent.chat()
    res = await chat.send("hi")
    assert res.text == "done" and [a.name for a in chat.artifacts] == ["note"]
    assert all(isinstance(a, nba.Artifact) for a in chat.artifacts)
    assert all(isinstance(m, nba.Message) for m in chat.messages)
    assert "aside" in [m.text for m in chat.messages]
    if stored:
        snap = await agent.get_snapshot(res.snapshot_id)
        assert snap is not None and snap.state is not None
        assert [a.name for a in snap.state.artifacts] == ["note"]
        assert all(isinstance(m, nba.Message) for m in snap.state.messages)
