"""Anthropic Messages API against documented shapes.

Fixtures follow Anthropic's API reference: "Messages" (docs.anthropic.com/en/api/messages):
request ``{model, max_tokens, system, messages[] {role: user|assistant, content[]},
tools[] {name, description, input_schema}, tool_choice {type}}``, content blocks
``text``, ``tool_use {id, name, input}``, ``tool_result {tool_use_id, content}``,
``thinking {thinking, signature}``, response ``{id, type: "message", role,
content[], stop_reason, stop_sequence, usage {input_tokens, output_tokens}}``;
"Streaming Messages" (docs.anthropic.com/en/docs/build-with-claude/streaming):
``message_start``, ``content_block_start``, ``content_block_delta`` with
``text_delta`` / ``input_json_delta {partial_json}`` / ``thinking_delta`` /
``signature_delta``, ``content_block_stop``, ``message_delta {delta: {stop_reason},
usage}``, ``message_stop``, ``ping`` and ``error`` events; "Errors"
(docs.anthropic.com/en/api/errors): ``{"type": "error", "error": {"type", "message"}}``
with ``authentication_error`` 401, ``invalid_request_error`` 400,
``rate_limit_error`` 429, ``api_error`` 500, ``overloaded_error`` 529.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

import nb_agents as nba
from nb_agents.models.anthropic import AnthropicModel
from nb_agents.models.errors import (
    AuthenticationError,
    BadRequestError,
    MissingApiKeyError,
    ModelConnectionError,
    ModelError,
    ModelServerError,
    ModelTimeoutError,
    OverloadedError,
    RateLimitError,
)
from nb_agents.types import (
    GenerateRequest,
    Message,
    ModelResponseChunk,
    Part,
    ToolDefinition,
    ToolRequest,
    ToolResponse,
)

from .fakes import FakeServer, Sleeps, json_response, run_banking_flow, sse_response

pytestmark = pytest.mark.anyio

SCHEMA = {"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]}
TOOLS = [ToolDefinition(name="getBalance", description="The balance of an account.", input_schema=SCHEMA)]


def message(content: list[dict[str, Any]], stop: str | None = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 2095, "output_tokens": 503},
    }


def model(server: FakeServer, **kw: Any) -> AnthropicModel:
    kw.setdefault("api_key", "sk-ant-test")
    return AnthropicModel("claude-haiku-4-5", client=server.client(), **kw)


def user(text: str) -> Message:
    return Message(role="user", content=[Part(text=text)])


async def collect(m: AnthropicModel, request: GenerateRequest) -> tuple[Any, list[ModelResponseChunk]]:
    chunks: list[ModelResponseChunk] = []

    async def sink(c: ModelResponseChunk) -> None:
        chunks.append(c)

    return await m.generate(request, sink), chunks


def stream_events(blocks: list[list[dict[str, Any]]], stop: str = "end_turn") -> list[dict[str, Any]]:
    """message_start, then per block: its start event, its deltas, its stop; then message_delta/stop."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {**message([], None), "usage": {"input_tokens": 25, "output_tokens": 1}},
        }
    ]
    for i, (start, *deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": i, "content_block": start})
        events.extend({"type": "content_block_delta", "index": i, "delta": d} for d in deltas)
        events.append({"type": "content_block_stop", "index": i})
        if i == 0:
            events.append({"type": "ping"})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 15},
        }
    )
    events.append({"type": "message_stop"})
    return events


async def test_request_body_field_by_field() -> None:
    server = FakeServer(responses=[json_response(message([{"type": "text", "text": "ok"}]))])
    history = [
        Message(role="system", content=[Part(text="Be brief.")]),
        user("What's my balance?"),
        Message(
            role="model",
            content=[
                Part(reasoning="The user wants a balance.", metadata={"signature": "EqQBCgIYAhIM"}),
                Part(text="Checking."),
                Part(
                    tool_request=ToolRequest(name="getBalance", ref="toolu_01", input={"account": "checking"})
                ),
            ],
        ),
        Message(
            role="tool",
            content=[Part(tool_response=ToolResponse(name="getBalance", ref="toolu_01", output=1200.0))],
        ),
        user("Thanks"),
    ]
    cfg = {
        "temperature": 0.3,
        "maxOutputTokens": 256,
        "topK": 5,
        "stopSequences": ["END"],
        "metadata": {"user_id": "u-1"},
    }
    m = model(server, config={"top_p": 0.8})
    await m.generate(GenerateRequest(messages=history, tools=TOOLS, config=cfg, tool_choice="required"))
    req = server.requests[0]
    assert str(req.url) == "https://api.anthropic.com/v1/messages"
    assert req.headers["x-api-key"] == "sk-ant-test"
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert server.bodies[0] == {
        "model": "claude-haiku-4-5",
        "max_tokens": 256,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What's my balance?"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "The user wants a balance.",
                        "signature": "EqQBCgIYAhIM",
                    },
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "getBalance",
                        "input": {"account": "checking"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01", "content": "1200.0"},
                    {"type": "text", "text": "Thanks"},
                ],
            },
        ],
        "tools": [
            {"name": "getBalance", "description": "The balance of an account.", "input_schema": SCHEMA}
        ],
        "tool_choice": {"type": "any"},
        "temperature": 0.3,
        "top_p": 0.8,
        "top_k": 5,
        "stop_sequences": ["END"],
        "metadata": {"user_id": "u-1"},
    }


async def test_max_tokens_is_always_sent() -> None:
    server = FakeServer(responses=[json_response(message([{"type": "text", "text": "ok"}]))] * 2)
    await model(server).generate(GenerateRequest(messages=[user("hi")]))
    await model(server, max_tokens=1000).generate(GenerateRequest(messages=[user("hi")]))
    assert [b["max_tokens"] for b in server.bodies] == [4096, 1000]
    assert "system" not in server.bodies[0] and "tools" not in server.bodies[0]


async def test_tool_use_answer_with_parallel_calls() -> None:
    content = [
        {"type": "text", "text": "I'll check both."},
        {"type": "tool_use", "id": "toolu_A", "name": "getBalance", "input": {"account": "checking"}},
        {"type": "tool_use", "id": "toolu_B", "name": "getBalance", "input": {"account": "savings"}},
    ]
    server = FakeServer(responses=[json_response(message(content, "tool_use"))])
    res = await model(server).generate(GenerateRequest(messages=[user("balances")], tools=TOOLS))
    assert res.to_wire() == {
        "message": {
            "role": "model",
            "content": [
                {"text": "I'll check both."},
                {"toolRequest": {"name": "getBalance", "ref": "toolu_A", "input": {"account": "checking"}}},
                {"toolRequest": {"name": "getBalance", "ref": "toolu_B", "input": {"account": "savings"}}},
            ],
        },
        "finishReason": "stop",
        "usage": {"inputTokens": 2095, "outputTokens": 503, "totalTokens": 2598},
    }


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("end_turn", "stop"),
        ("tool_use", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("refusal", "blocked"),
        ("something_new", "other"),
    ],
)
async def test_stop_reasons(reason: str, expected: str) -> None:
    server = FakeServer(responses=[json_response(message([{"type": "text", "text": "x"}], reason))])
    res = await model(server).generate(GenerateRequest(messages=[user("hi")]))
    assert res.finish_reason == expected


async def test_stream_text_thinking_and_tool_json_split_across_deltas() -> None:
    blocks = [
        [
            {"type": "thinking", "thinking": "", "signature": ""},
            {"type": "thinking_delta", "thinking": "Two accounts."},
            {"type": "signature_delta", "signature": "EqQBCgIYAhIM"},
        ],
        [
            {"type": "text", "text": ""},
            {"type": "text_delta", "text": "Let me "},
            {"type": "text_delta", "text": "check."},
        ],
        [
            {"type": "tool_use", "id": "toolu_A", "name": "getBalance", "input": {}},
            {"type": "input_json_delta", "partial_json": ""},
            {"type": "input_json_delta", "partial_json": '{"acc'},
            {"type": "input_json_delta", "partial_json": 'ount": "checking"}'},
        ],
        [
            {"type": "tool_use", "id": "toolu_B", "name": "getBalance", "input": {}},
            {"type": "input_json_delta", "partial_json": '{"account": "savings"}'},
        ],
    ]
    server = FakeServer(responses=[sse_response(stream_events(blocks, "tool_use"), named=True, split=13)])
    res, chunks = await collect(model(server), GenerateRequest(messages=[user("balances")], tools=TOOLS))
    assert server.bodies[0]["stream"] is True
    assert [c.content[0].to_wire() for c in chunks] == [
        {"reasoning": "Two accounts."},
        {"text": "Let me "},
        {"text": "check."},
        {"toolRequest": {"name": "getBalance", "ref": "toolu_A", "input": {"account": "checking"}}},
        {"toolRequest": {"name": "getBalance", "ref": "toolu_B", "input": {"account": "savings"}}},
    ]
    assert res.to_wire() == {
        "message": {
            "role": "model",
            "content": [
                {"reasoning": "Two accounts.", "metadata": {"signature": "EqQBCgIYAhIM"}},
                {"text": "Let me check."},
                {"toolRequest": {"name": "getBalance", "ref": "toolu_A", "input": {"account": "checking"}}},
                {"toolRequest": {"name": "getBalance", "ref": "toolu_B", "input": {"account": "savings"}}},
            ],
        },
        "finishReason": "stop",
        "usage": {"inputTokens": 25, "outputTokens": 15, "totalTokens": 40},
    }


async def test_missing_key_is_raised_before_any_request() -> None:
    server = FakeServer(responses=[])
    with pytest.raises(MissingApiKeyError, match="ANTHROPIC_API_KEY") as info:
        await AnthropicModel("claude-haiku-4-5", client=server.client()).generate(
            GenerateRequest(messages=[user("hi")])
        )
    assert info.value.status == "UNAUTHENTICATED"
    assert server.requests == []


def anthropic_error(kind: str, text: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text}}


@pytest.mark.parametrize(
    ("http", "kind", "cls", "genkit_status", "attempts"),
    [
        (401, "authentication_error", AuthenticationError, "UNAUTHENTICATED", 1),
        (400, "invalid_request_error", BadRequestError, "INVALID_ARGUMENT", 1),
        (429, "rate_limit_error", RateLimitError, "RESOURCE_EXHAUSTED", 3),
        (500, "api_error", ModelServerError, "INTERNAL", 3),
        (529, "overloaded_error", OverloadedError, "UNAVAILABLE", 3),
        (429, "overloaded_error", OverloadedError, "UNAVAILABLE", 3),  # overload reported on 429 too
    ],
)
async def test_error_kinds(
    http: int, kind: str, cls: type[ModelError], genkit_status: str, attempts: int
) -> None:
    server = FakeServer(answer=lambda r, b: json_response(anthropic_error(kind, f"{kind} happened"), http))
    sleeps = Sleeps()
    with pytest.raises(cls) as info:
        await model(server, sleep=sleeps).generate(GenerateRequest(messages=[user("hi")]))
    assert info.value.status == genkit_status
    assert info.value.message == f"anthropic: {kind} happened"
    assert info.value.details["body"] == anthropic_error(kind, f"{kind} happened")
    assert len(server.requests) == attempts


async def test_overloaded_retried_with_retry_after_date_then_succeeds() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    busy = json_response(
        anthropic_error("overloaded_error", "Overloaded"), 529, headers={"retry-after": when}
    )
    ok = sse_response(
        stream_events([[{"type": "text", "text": ""}, {"type": "text_delta", "text": "hi"}]]), named=True
    )
    server = FakeServer(responses=[busy, ok])
    sleeps = Sleeps()
    res, _ = await collect(model(server, sleep=sleeps), GenerateRequest(messages=[user("hi")]))
    assert res.message.text == "hi"  # type: ignore[union-attr]
    assert len(sleeps.delays) == 1 and 25 < sleeps.delays[0] <= 30  # the HTTP date, as seconds from now


async def test_error_event_inside_the_stream() -> None:
    events = [
        {"type": "message_start", "message": message([], None)},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]
    ok = sse_response(
        stream_events([[{"type": "text", "text": ""}, {"type": "text_delta", "text": "hi"}]]), named=True
    )
    server = FakeServer(responses=[sse_response(events, named=True), ok])
    sleeps = Sleeps()
    res, _ = await collect(model(server, sleep=sleeps), GenerateRequest(messages=[user("hi")]))
    assert res.message.text == "hi"  # type: ignore[union-attr]
    assert len(server.requests) == 2  # nothing had been streamed yet, so it was retried
    events = stream_events([[{"type": "text", "text": ""}, {"type": "text_delta", "text": "par"}]])[:4]
    events.append({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}})
    server = FakeServer(responses=[sse_response(events, named=True), ok])
    with pytest.raises(ModelServerError, match="Internal server error"):
        await collect(model(server, sleep=sleeps), GenerateRequest(messages=[user("hi")]))
    assert len(server.requests) == 1


async def test_connection_error_and_timeout() -> None:
    def reset(request: httpx.Request, body: Any) -> httpx.Response:
        raise httpx.ConnectError("connection reset by peer", request=request)

    server = FakeServer(answer=reset)
    with pytest.raises(ModelConnectionError, match="connection reset"):
        await model(server, sleep=Sleeps(), max_retries=0).generate(GenerateRequest(messages=[user("hi")]))
    assert len(server.requests) == 1

    def slow(request: httpx.Request, body: Any) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(ModelTimeoutError) as info:
        await model(FakeServer(answer=slow), sleep=Sleeps()).generate(GenerateRequest(messages=[user("hi")]))
    assert info.value.status == "DEADLINE_EXCEEDED"


# -- an agent turn with an interrupt, end to end -----------------------------------------


def bank_server(request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
    """First the two tool_use blocks, then a summary of the tool_result blocks."""
    assert body["system"] == "You are a banking assistant." and body["temperature"] == 0
    last = body["messages"][-1]
    results = {
        b["tool_use_id"]: json.loads(b["content"]) for b in last["content"] if b["type"] == "tool_result"
    }
    if results:
        assert body["messages"][-2]["content"][2] == {
            "type": "tool_use",
            "id": "toolu_T",
            "name": "transferMoney",
            "input": {"amount": 500, "toAccount": "savings"},
        }
        text = f"Done: {results['toolu_T']['transactionId']}; checking had ${results['toolu_B']:.0f}."
        blocks = [
            [
                {"type": "text", "text": ""},
                {"type": "text_delta", "text": text[:6]},
                {"type": "text_delta", "text": text[6:]},
            ]
        ]
        return sse_response(stream_events(blocks), named=True)
    blocks = [
        [{"type": "text", "text": ""}, {"type": "text_delta", "text": "Checking first."}],
        [
            {"type": "tool_use", "id": "toolu_B", "name": "getBalance", "input": {}},
            {"type": "input_json_delta", "partial_json": '{"account": "checking"}'},
        ],
        [
            {"type": "tool_use", "id": "toolu_T", "name": "transferMoney", "input": {}},
            {"type": "input_json_delta", "partial_json": '{"amount": 500, '},
            {"type": "input_json_delta", "partial_json": '"toAccount": "savings"}'},
        ],
    ]
    return sse_response(stream_events(blocks, "tool_use"), named=True)


async def test_agent_turn_with_interrupt_end_to_end() -> None:
    server = FakeServer(answer=bank_server)
    final, accounts, streamed = await run_banking_flow(model(server))
    assert final.finish_reason == "stop"
    assert final.text == "Done: txn-0001; checking had $1200."
    assert "".join(streamed) == final.text
    assert accounts == {"checking": 700.0, "savings": 800.0}
    assert len(server.requests) == 2


async def test_model_error_fails_the_turn_gracefully() -> None:
    server = FakeServer(
        answer=lambda r, b: json_response(anthropic_error("overloaded_error", "Overloaded"), 529)
    )
    sleeps = Sleeps()
    agent = nba.define_agent("c", model=model(server, sleep=sleeps), store=nba.InMemorySessionStore())
    out = await agent.run_text("hi")
    assert out.finish_reason == "failed"
    assert out.error is not None and out.error.status == "UNAVAILABLE"
    assert out.error.message == "anthropic: Overloaded"
    assert len(sleeps.delays) == 2  # retried twice before giving up


async def test_registry_name_and_missing_key_in_a_turn() -> None:
    agent = nba.define_agent("c2", model="anthropic/claude-haiku-4-5", store=nba.InMemorySessionStore())
    out = await agent.run_text("hi")
    assert out.finish_reason == "failed" and out.error is not None
    assert out.error.status == "UNAUTHENTICATED" and "ANTHROPIC_API_KEY" in out.error.message
