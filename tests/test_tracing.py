"""`nb_agents.tracing`: OpenTelemetry spans after the GenAI conventions, read from an in-memory exporter."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from directives import directive, read_ledger, transfer_call
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from subagent_app import ask, make_agents

import nb_agents as nba
import nb_agents.tracing
from nb_agents.testing import FunctionModel

pytestmark = pytest.mark.anyio


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    nb_agents.tracing.instrument(tracer_provider=provider)
    try:
        yield memory
    finally:
        nb_agents.tracing.uninstrument()


def by_name(spans: tuple[ReadableSpan, ...] | list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def holds(span: ReadableSpan, expected: dict[str, Any]) -> bool:
    """Whether the span's attributes include `expected`."""
    found = dict(span.attributes or {})
    assert expected.items() <= found.items(), found
    return True


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def test_import_nb_agents_does_not_import_opentelemetry() -> None:
    code = (
        "import sys, nb_agents as nba\n"
        "from nb_agents.testing import FunctionModel\n"
        "a = nba.define_agent('a', model=FunctionModel(lambda r: 'hi'))\n"
        "b = nba.define_agent('b', model=FunctionModel(lambda r: 'hi'), tools=[a.as_tool()])\n"
        "assert b.chat().send_sync('x').text == 'hi'\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_a_turn_is_an_invoke_agent_span_with_its_model_calls_and_tool_runs(
    exporter: InMemorySpanExporter,
) -> None:
    @nba.tool
    async def lookup(key: str) -> str:
        """Look a fact up."""
        return f"fact about {key}"

    def model(req: nba.GenerateRequest) -> Any:
        if req.messages[-1].role == "tool":
            return {
                "message": {"role": "model", "content": [{"text": "done"}]},
                "usage": {"inputTokens": 7, "outputTokens": 2},
                "finishReason": "stop",
            }
        call = {"toolRequest": {"name": "lookup", "ref": "c1", "input": {"key": "x"}}}
        return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}

    agent = nba.define_agent("helper", model=FunctionModel(model, name="openai/gpt-x"), tools=[lookup])
    res = await agent.chat().send("go")
    spans = exporter.get_finished_spans()
    [turn] = by_name(spans, "invoke_agent")
    assert turn.name == "invoke_agent helper" and turn.kind == SpanKind.INTERNAL
    assert holds(
        turn,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "helper",
            "gen_ai.conversation.id": res.session_id,
            "gen_ai.provider.name": "openai",
            "nb_agents.finish_reason": "stop",
        },
    )
    chats = by_name(spans, "chat")
    assert [c.name for c in chats] == ["chat gpt-x", "chat gpt-x"]
    assert all(c.kind == SpanKind.CLIENT and parent_of(c) == turn.context.span_id for c in chats)
    assert (
        attrs(chats[1])["gen_ai.usage.input_tokens"] == 7
        and attrs(chats[1])["gen_ai.usage.output_tokens"] == 2
    )
    assert (
        attrs(chats[0])["gen_ai.request.model"] == "gpt-x"
        and attrs(chats[0])["gen_ai.provider.name"] == "openai"
    )
    [tool] = by_name(spans, "execute_tool")
    assert tool.name == "execute_tool lookup" and parent_of(tool) == turn.context.span_id
    assert holds(
        tool,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": "Look a fact up.",
            "nb_agents.tool.outcome": "done",
        },
    )
    assert chats[0].end_time <= tool.start_time <= tool.end_time <= chats[1].start_time  # type: ignore[operator]


async def test_a_failed_turn_is_an_error_and_uninstrument_stops_the_spans(
    exporter: InMemorySpanExporter,
) -> None:
    @nba.tool
    async def broken() -> str:
        """Fails."""
        raise RuntimeError("disk full")

    call = {"toolRequest": {"name": "broken", "ref": "b1", "input": {}}}
    agent = nba.define_agent(
        "fragile",
        model=FunctionModel(lambda r: {"message": {"role": "model", "content": [call]}}),
        tools=[broken],
    )
    out = await agent.run("go")
    assert out.finish_reason == "failed"
    [turn] = by_name(exporter.get_finished_spans(), "invoke_agent")
    [tool] = by_name(exporter.get_finished_spans(), "execute_tool")
    assert turn.status.status_code == StatusCode.ERROR and attrs(turn)["error.type"] == "INTERNAL"
    assert tool.status.status_code == StatusCode.ERROR and attrs(tool)["error.type"] == "RuntimeError"
    nb_agents.tracing.uninstrument()
    exporter.clear()
    await agent.run("go")
    assert exporter.get_finished_spans() == ()


async def test_a_sub_agent_is_traced_under_its_tool_and_the_wait_for_a_person_is_recorded(
    exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    lead, _, _ = make_agents(nba.SqliteSessionStore(str(tmp_path / "a.db")), ledger)
    chat = lead.chat()
    res = await chat.send(directive(ask("manager", "m1", ask("worker", "w1", transfer_call("t1", 5)))))
    spans = exporter.get_finished_spans()
    turns = {attrs(s)["gen_ai.agent.name"]: s for s in by_name(spans, "invoke_agent")}
    tools = {attrs(s)["gen_ai.tool.name"]: s for s in by_name(spans, "execute_tool")}
    assert set(turns) == {"lead", "manager", "worker"} and set(tools) == {"manager", "worker"}
    # lead > execute_tool manager > invoke_agent manager > execute_tool worker > invoke_agent worker
    assert parent_of(tools["manager"]) == turns["lead"].context.span_id
    assert parent_of(turns["manager"]) == tools["manager"].context.span_id
    assert parent_of(tools["worker"]) == turns["manager"].context.span_id
    assert parent_of(turns["worker"]) == tools["worker"].context.span_id
    assert len({s.context.trace_id for s in spans}) == 1
    assert attrs(tools["worker"])["nb_agents.tool.outcome"] == "paused"
    assert all(attrs(t)["nb_agents.finish_reason"] == "interrupted" for t in turns.values())
    [pause] = [e for e in turns["worker"].events if e.name == "hitl.pause"]
    assert dict(pause.attributes or {}) == {"gen_ai.tool.name": "transfer", "gen_ai.tool.call.id": "t1"}
    # ana answers at the top: the wait is recorded at each level the answer resumed
    exporter.clear()
    out = await chat.resume(restart=[res.interrupts[0].approve()], context={"auth": {"uid": "ana"}})
    assert out.finish_reason == "stop" and len(read_ledger(ledger)) == 1
    spans = exporter.get_finished_spans()
    waits = by_name(spans, "hitl.wait")
    assert sorted(s.name for s in waits) == ["hitl.wait manager", "hitl.wait transfer", "hitl.wait worker"]
    leaf = next(s for s in waits if s.name == "hitl.wait transfer")
    assert holds(
        leaf,
        {
            "gen_ai.tool.name": "transfer",
            "gen_ai.tool.call.id": "t1",
            "hitl.answer": "restart",
            "hitl.decision": "person",
            "hitl.answered_by": "ana",
        },
    )
    assert attrs(leaf)["hitl.wait.seconds"] >= 0 and leaf.start_time <= leaf.end_time  # type: ignore[operator]
    worker_turn = next(s for s in by_name(spans, "invoke_agent") if attrs(s)["gen_ai.agent.name"] == "worker")
    assert parent_of(leaf) == worker_turn.context.span_id
    paused = await lead.get_snapshot(res.snapshot_id)
    assert paused is not None and paused.updated_at is not None
    top = next(s for s in waits if s.name == "hitl.wait manager")
    assert top.start_time == nb_agents.tracing._iso_ns(paused.updated_at)  # the wait starts at the pause
    [run] = by_name(spans, "execute_tool transfer")
    assert parent_of(run) == worker_turn.context.span_id


async def test_without_a_store_the_answer_is_an_event(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    lead, _, _ = make_agents(None, tmp_path / "ledger.jsonl")
    chat = lead.chat()
    res = await chat.send(directive(ask("worker", "w1", transfer_call("t1", 5))))
    exporter.clear()
    await chat.resume(restart=[res.interrupts[0].approve()], metadata={"answeredBy": "lee"})
    top = next(
        s
        for s in by_name(exporter.get_finished_spans(), "invoke_agent")
        if attrs(s)["gen_ai.agent.name"] == "lead"
    )
    [event] = [e for e in top.events if e.name == "hitl.answer"]
    assert {"gen_ai.tool.name": "worker", "hitl.answered_by": "lee"}.items() <= dict(
        event.attributes or {}
    ).items()
