"""OpenAI-compatible chat completions against documented request/response shapes.

Fixtures follow OpenAI's API reference, "Create chat completion"
(developers.openai.com/api/reference/.../chat/completions/create): the
``chat.completion`` object (``choices[].message`` with ``content`` and
``tool_calls[] {id, type: "function", function: {name, arguments}}``,
``finish_reason``, ``usage {prompt_tokens, completion_tokens, total_tokens}``),
the ``chat.completion.chunk`` stream (``choices[].delta`` with ``content`` and
index-keyed ``tool_calls`` fragments, a final usage chunk with empty ``choices``
when ``stream_options.include_usage`` is set, then ``data: [DONE]``) and the
error envelope ``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import nb_agents as nba
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
from nb_agents.models.openai_compat import OpenAICompatModel
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

TOOLS = [
    ToolDefinition(
        name="getBalance",
        description="The balance of an account.",
        input_schema={
            "type": "object",
            "properties": {"account": {"type": "string"}},
            "required": ["account"],
        },
    )
]


def completion(
    message: dict[str, Any], finish: str | None = "stop", usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": usage or {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29},
    }


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion.chunk",
        "created": 1694268190,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def model(server: FakeServer, **kw: Any) -> OpenAICompatModel:
    kw.setdefault("api_key", "sk-test")
    return OpenAICompatModel("gpt-4o-mini", client=server.client(), **kw)


def user(text: str) -> Message:
    return Message(role="user", content=[Part(text=text)])


async def collect(m: OpenAICompatModel, request: GenerateRequest) -> tuple[Any, list[ModelResponseChunk]]:
    chunks: list[ModelResponseChunk] = []

    async def sink(c: ModelResponseChunk) -> None:
        chunks.append(c)

    return await m.generate(request, sink), chunks


async def test_request_body_field_by_field() -> None:
    server = FakeServer(responses=[json_response(completion({"content": "ok"}))])
    m = model(server, config={"temperature": 0.9, "seed": 7})
    history = [
        Message(role="system", content=[Part(text="Be brief.")]),
        user("What's my balance?"),
        Message(
            role="model",
            content=[
                Part(text="Checking."),
                Part(
                    tool_request=ToolRequest(name="getBalance", ref="call_1", input={"account": "checking"})
                ),
            ],
        ),
        Message(
            role="tool",
            content=[Part(tool_response=ToolResponse(name="getBalance", ref="call_1", output=1200.0))],
        ),
        user("Thanks"),
    ]
    cfg = {"temperature": 0.1, "maxOutputTokens": 64, "topP": 0.5, "stopSequences": ["END"], "user": "u-1"}
    await m.generate(GenerateRequest(messages=history, tools=TOOLS, config=cfg, tool_choice="auto"))
    req = server.requests[0]
    assert req.method == "POST" and str(req.url) == "https://api.openai.com/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert server.bodies[0] == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What's my balance?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "getBalance", "arguments": '{"account":"checking"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "1200.0"},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "getBalance",
                    "description": "The balance of an account.",
                    "parameters": TOOLS[0].input_schema,
                },
            }
        ],
        "tool_choice": "auto",
        "temperature": 0.1,  # the request's config wins over the model's default
        "top_p": 0.5,
        "max_completion_tokens": 64,  # OpenAI's own field (max_tokens is rejected by o-series models)
        "stop": ["END"],
        "seed": 7,  # unknown keys pass through, from the model default ...
        "user": "u-1",  # ... and from the request
    }


async def test_text_answer_usage_and_version_override() -> None:
    server = FakeServer(responses=[json_response(completion({"content": "Hello!"}))])
    res = await model(server).generate(GenerateRequest(messages=[user("hi")], config={"version": "gpt-4.1"}))
    assert server.bodies[0]["model"] == "gpt-4.1"
    assert res.to_wire() == {
        "message": {"role": "model", "content": [{"text": "Hello!"}]},
        "finishReason": "stop",
        "usage": {"inputTokens": 19, "outputTokens": 10, "totalTokens": 29},
    }


async def test_parallel_tool_calls_and_invalid_arguments() -> None:
    calls = [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "getBalance", "arguments": '{"account": "checking"}'},
        },
        {
            "id": "call_b",
            "type": "function",
            "function": {"name": "getBalance", "arguments": '{"account": "sav'},
        },
    ]
    server = FakeServer(
        responses=[json_response(completion({"content": None, "tool_calls": calls}, "tool_calls"))]
    )
    res = await model(server).generate(GenerateRequest(messages=[user("both balances")], tools=TOOLS))
    assert res.finish_reason == "stop"
    parts = res.message.content  # type: ignore[union-attr]
    assert [(p.tool_request.name, p.tool_request.ref, p.tool_request.input) for p in parts] == [  # type: ignore[union-attr]
        ("getBalance", "call_a", {"account": "checking"}),
        ("getBalance", "call_b", '{"account": "sav'),  # kept raw: the tool's input check tells the model
    ]
    # and the raw text goes back verbatim in the history
    again = FakeServer(responses=[json_response(completion({"content": "ok"}))])
    await model(again).generate(GenerateRequest(messages=[user("x"), res.message]))  # type: ignore[list-item]
    sent = again.bodies[0]["messages"][1]["tool_calls"]
    assert [c["function"]["arguments"] for c in sent] == ['{"account":"checking"}', '{"account": "sav']


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "stop"),
        ("content_filter", "blocked"),
        (None, "unknown"),
    ],
)
async def test_finish_reasons(reason: str | None, expected: str) -> None:
    server = FakeServer(responses=[json_response(completion({"content": "x"}, reason))])
    res = await model(server).generate(GenerateRequest(messages=[user("hi")]))
    assert res.finish_reason == expected


async def test_stream_text_and_tool_calls_split_across_chunks() -> None:
    events = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Let me "}),
        chunk({"content": "check."}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "getBalance", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"acc'}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "getBalance", "arguments": '{"account"'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ount": "checking"}'}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": ': "savings"}'}}]}),
        chunk({}, "tool_calls"),
        {
            "id": "chatcmpl-123",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42},
        },
    ]
    server = FakeServer(responses=[sse_response(events, done=True, split=7)])
    res, chunks = await collect(model(server), GenerateRequest(messages=[user("balances")], tools=TOOLS))
    assert server.bodies[0]["stream"] is True
    assert server.bodies[0]["stream_options"] == {"include_usage": True}
    assert [c.text for c in chunks[:2]] == ["Let me ", "check."]
    streamed_calls = [c.content[0].tool_request for c in chunks[2:]]
    assert [(t.ref, t.input) for t in streamed_calls] == [  # type: ignore[union-attr]
        ("call_a", {"account": "checking"}),
        ("call_b", {"account": "savings"}),
    ]
    assert res.to_wire() == {
        "message": {
            "role": "model",
            "content": [
                {"text": "Let me check."},
                {"toolRequest": {"name": "getBalance", "ref": "call_a", "input": {"account": "checking"}}},
                {"toolRequest": {"name": "getBalance", "ref": "call_b", "input": {"account": "savings"}}},
            ],
        },
        "finishReason": "stop",
        "usage": {"inputTokens": 30, "outputTokens": 12, "totalTokens": 42},
    }


async def test_ollama_parallel_calls_reusing_index_zero() -> None:
    """Ollama streams each parallel call whole, every one at index 0 with its own id."""
    events = [
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_x",
                        "function": {"name": "getBalance", "arguments": '{"account":"checking"}'},
                    }
                ]
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_y",
                        "function": {"name": "getBalance", "arguments": '{"account":"savings"}'},
                    }
                ]
            }
        ),
        chunk({}, "tool_calls"),
    ]
    server = FakeServer(responses=[sse_response(events, done=True)])
    m = OpenAICompatModel("llama3.2", provider="ollama", client=server.client())
    res, _ = await collect(m, GenerateRequest(messages=[user("balances")], tools=TOOLS))
    assert str(server.requests[0].url) == "http://127.0.0.1:11434/v1/chat/completions"
    assert "authorization" not in server.requests[0].headers  # a local server needs no key
    assert server.bodies[0]["model"] == "llama3.2"
    assert [p.tool_request.input for p in res.message.content] == [  # type: ignore[union-attr]
        {"account": "checking"},
        {"account": "savings"},
    ]


async def test_missing_key_is_raised_before_any_request() -> None:
    server = FakeServer(responses=[])
    m = OpenAICompatModel("gpt-4o-mini", client=server.client())  # construction never needs a key
    with pytest.raises(MissingApiKeyError) as info:
        await m.generate(GenerateRequest(messages=[user("hi")]))
    assert info.value.status == "UNAUTHENTICATED"
    assert "OPENAI_API_KEY" in info.value.message
    assert server.requests == []


async def test_key_and_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    server = FakeServer(responses=[json_response(completion({"content": "ok"}))] * 2)
    await OpenAICompatModel("gpt-4o-mini", client=server.client()).generate(
        GenerateRequest(messages=[user("a")])
    )
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    m = OpenAICompatModel("qwen", client=server.client())  # a self-hosted server: no key required
    await m.generate(GenerateRequest(messages=[user("b")], config={"maxOutputTokens": 9}))
    assert str(server.requests[1].url) == "http://127.0.0.1:8000/v1/chat/completions"
    assert server.bodies[1]["max_tokens"] == 9


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@pytest.mark.parametrize(
    ("status", "kind", "cls", "genkit_status", "attempts"),
    [
        (401, "invalid_request_error", AuthenticationError, "UNAUTHENTICATED", 1),
        (400, "invalid_request_error", BadRequestError, "INVALID_ARGUMENT", 1),
        (429, "requests", RateLimitError, "RESOURCE_EXHAUSTED", 3),
        (500, "server_error", ModelServerError, "INTERNAL", 3),
        (503, "server_error", OverloadedError, "UNAVAILABLE", 3),
    ],
)
async def test_error_kinds(
    status: int, kind: str, cls: type[ModelError], genkit_status: str, attempts: int
) -> None:
    server = FakeServer(answer=lambda r, b: json_response(error_body(f"it failed ({status})", kind), status))
    sleeps = Sleeps()
    with pytest.raises(cls) as info:
        await model(server, sleep=sleeps).generate(GenerateRequest(messages=[user("hi")]))
    err = info.value
    assert err.status == genkit_status and err.http_status == status
    assert err.message == f"openai: it failed ({status})"  # the provider's own message
    assert err.details["type"] == kind
    assert len(server.requests) == attempts  # max_retries=2 -> three attempts for retryable kinds
    assert len(sleeps.delays) == attempts - 1


async def test_connection_error_and_timeout() -> None:
    def refuse(request: httpx.Request, body: Any) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    sleeps = Sleeps()
    server = FakeServer(answer=refuse)
    with pytest.raises(ModelConnectionError) as info:
        await model(server, sleep=sleeps, max_retries=1).generate(GenerateRequest(messages=[user("hi")]))
    assert info.value.status == "UNAVAILABLE" and "connection refused" in info.value.message
    assert len(server.requests) == 2

    def slow(request: httpx.Request, body: Any) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    server = FakeServer(answer=slow)
    with pytest.raises(ModelTimeoutError) as tinfo:
        await model(server, sleep=sleeps, timeout=5).generate(GenerateRequest(messages=[user("hi")]))
    assert tinfo.value.status == "DEADLINE_EXCEEDED" and "5s" in tinfo.value.message
    assert len(server.requests) == 1  # a slow model is not asked again


async def test_rate_limit_retried_after_retry_after_then_succeeds() -> None:
    limited = json_response(error_body("Rate limit reached", "requests"), 429, headers={"retry-after": "3"})
    server = FakeServer(responses=[limited, json_response(completion({"content": "finally"}))])
    sleeps = Sleeps()
    res = await model(server, sleep=sleeps).generate(GenerateRequest(messages=[user("hi")]))
    assert res.message.text == "finally"  # type: ignore[union-attr]
    assert sleeps.delays == [3.0]
    assert len(server.requests) == 2


async def test_stream_retried_before_output_not_after() -> None:
    limited = json_response(error_body("slow down", "requests"), 429, headers={"retry-after": "1"})
    ok = sse_response([chunk({"content": "hi"}), chunk({}, "stop")], done=True)
    server = FakeServer(responses=[limited, ok])
    sleeps = Sleeps()
    res, chunks = await collect(model(server, sleep=sleeps), GenerateRequest(messages=[user("hi")]))
    assert res.message.text == "hi" and [c.text for c in chunks] == ["hi"]  # type: ignore[union-attr]
    assert sleeps.delays == [1.0]
    # an error event after text went out is raised, never retried (the text would show twice)
    broken = sse_response(
        [chunk({"content": "partial"}), {"error": {"message": "upstream died", "type": "server_error"}}]
    )
    server = FakeServer(responses=[broken, ok])
    with pytest.raises(ModelServerError, match="upstream died"):
        await collect(model(server, sleep=sleeps), GenerateRequest(messages=[user("hi")]))
    assert len(server.requests) == 1


# -- an agent turn with an interrupt, end to end -----------------------------------------


def bank_server(request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
    """Answers like a model would: first the two tool calls, then a summary of their results."""
    assert body["stream"] is True and body["temperature"] == 0
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": "You are a banking assistant."}
    if messages[-1]["role"] == "tool":
        results = {m["tool_call_id"]: json.loads(m["content"]) for m in messages if m["role"] == "tool"}
        assert (
            messages[-3]["tool_calls"][1]["function"]["arguments"] == '{"amount":500,"toAccount":"savings"}'
        )
        text = f"Done: {results['call_t']['transactionId']}; checking had ${results['call_b']:.0f}."
        events = [chunk({"content": text[:6]}), chunk({"content": text[6:]}), chunk({}, "stop")]
    else:
        events = [
            chunk({"content": "Checking first."}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_b",
                            "function": {"name": "getBalance", "arguments": '{"account":'},
                        }
                    ]
                }
            ),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_t",
                            "function": {"name": "transferMoney", "arguments": '{"amount": 500,'},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"checking"}'}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": ' "toAccount": "savings"}'}}]}),
            chunk({}, "tool_calls"),
        ]
    return sse_response(events, done=True)


async def test_agent_turn_with_interrupt_end_to_end() -> None:
    server = FakeServer(answer=bank_server)
    final, accounts, streamed = await run_banking_flow(model(server))
    assert final.finish_reason == "stop"
    assert final.text == "Done: txn-0001; checking had $1200."
    assert "".join(streamed) == final.text
    assert accounts == {"checking": 700.0, "savings": 800.0}
    assert len(server.requests) == 2
    tools = {t["function"]["name"] for t in server.bodies[0]["tools"]}
    assert tools == {"getBalance", "transferMoney"}


async def test_model_error_fails_the_turn_gracefully() -> None:
    server = FakeServer(
        responses=[
            json_response(completion({"content": "first answer"})),
            json_response(error_body("Incorrect API key provided", "invalid_request_error"), 401),
            json_response(completion({"content": "back again"})),
        ]
    )
    agent = nba.define_agent("a", model=model(server), store=nba.InMemorySessionStore())
    good = await agent.run_text("hi")
    out = await agent.run_text("and now?", snapshot_id=good.snapshot_id)
    assert out.finish_reason == "failed"
    assert out.error is not None and out.error.status == "UNAUTHENTICATED"
    assert "Incorrect API key provided" in out.error.message
    assert out.snapshot_id == good.snapshot_id  # the last good state is kept ...
    again = await agent.run_text("retry", snapshot_id=out.snapshot_id)  # ... and goes on
    assert again.finish_reason == "stop" and again.message.text == "back again"  # type: ignore[union-attr]
    assert [m["content"] for m in server.bodies[2]["messages"]] == ["hi", "first answer", "retry"]


async def test_missing_key_inside_a_turn_is_a_failed_turn() -> None:
    agent = nba.define_agent("b", model="openai/gpt-4o-mini", store=nba.InMemorySessionStore())
    out = await agent.run_text("hi")
    assert out.finish_reason == "failed"
    assert out.error is not None and out.error.status == "UNAUTHENTICATED"
    assert "OPENAI_API_KEY" in out.error.message


async def test_server_that_ignores_stream_and_empty_streams() -> None:
    """Some compatible servers answer ``stream: true`` with one plain JSON completion."""
    server = FakeServer(responses=[json_response(completion({"content": "whole"}))])
    res, chunks = await collect(model(server), GenerateRequest(messages=[user("hi")]))
    assert res.message.text == "whole" and chunks == []  # type: ignore[union-attr]
    # a stream that ends before a single chunk is a connection failure (retried: nothing went out)
    empty = httpx.Response(200, content=b"", headers={"content-type": "text/event-stream"})
    server = FakeServer(
        responses=[empty, sse_response([chunk({"content": "ok"}), chunk({}, "stop")], done=True)]
    )
    res, _ = await collect(model(server, sleep=Sleeps()), GenerateRequest(messages=[user("hi")]))
    assert res.message.text == "ok" and len(server.requests) == 2  # type: ignore[union-attr]
