"""Gemini generateContent / streamGenerateContent against documented shapes.

Fixtures follow the Gemini API reference (ai.google.dev/api/generate-content):
``GenerateContentResponse {candidates[] {content {role: "model", parts[]},
finishReason, finishMessage?}, usageMetadata {promptTokenCount,
candidatesTokenCount, totalTokenCount, thoughtsTokenCount?}, promptFeedback?}``
with ``Candidate.FinishReason`` values (STOP, MAX_TOKENS, SAFETY, RECITATION,
BLOCKLIST, PROHIBITED_CONTENT, SPII, MALFORMED_FUNCTION_CALL, OTHER); the
function-calling guide (ai.google.dev/gemini-api/docs/function-calling):
``tools[].functionDeclarations[] {name, description, parametersJsonSchema}``,
``functionCall {name, args}`` parts from the model and ``functionResponse
{name, response}`` parts sent back in a ``user`` content; thought signatures
(ai.google.dev/gemini-api/docs/thought-signatures): ``thoughtSignature`` is a
part-level sibling of ``functionCall`` and must be returned as received; the
streaming endpoint ``:streamGenerateContent?alt=sse`` sends one
GenerateContentResponse per ``data:`` line; errors use Google's envelope
``{"error": {"code", "message", "status", "details"}}``.
"""

from __future__ import annotations

import re
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
from nb_agents.models.gemini import GeminiModel
from nb_agents.types import (
    GenerateRequest,
    Media,
    Message,
    ModelResponseChunk,
    Part,
    ToolDefinition,
    ToolRequest,
    ToolResponse,
)

from .fakes import FakeServer, Sleeps, json_response, run_banking_flow, sse_response

pytestmark = pytest.mark.anyio

BASE = "https://generativelanguage.googleapis.com/v1beta/models"
SCHEMA = {"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]}
TOOLS = [ToolDefinition(name="getBalance", description="The balance of an account.", input_schema=SCHEMA)]


def answer(parts: list[dict[str, Any]], finish: str | None = "STOP", usage: bool = True) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [cand], "modelVersion": "gemini-2.5-flash", "responseId": "r-1"}
    if usage:
        out["usageMetadata"] = {"promptTokenCount": 8, "candidatesTokenCount": 5, "totalTokenCount": 13}
    return out


def model(server: FakeServer, **kw: Any) -> GeminiModel:
    kw.setdefault("api_key", "g-test")
    return GeminiModel("gemini-2.5-flash", client=server.client(), **kw)


def user(text: str) -> Message:
    return Message(role="user", content=[Part(text=text)])


async def collect(m: GeminiModel, request: GenerateRequest) -> tuple[Any, list[ModelResponseChunk]]:
    chunks: list[ModelResponseChunk] = []

    async def sink(c: ModelResponseChunk) -> None:
        chunks.append(c)

    return await m.generate(request, sink), chunks


async def test_request_body_field_by_field() -> None:
    server = FakeServer(responses=[json_response(answer([{"text": "ok"}]))])
    image = Media(url="data:image/png;base64,iVBORw0KGgo=", content_type="image/png")
    history = [
        Message(role="system", content=[Part(text="Be brief.")]),
        Message(role="user", content=[Part(text="Balances? And this:"), Part(media=image)]),
        Message(
            role="model",
            content=[
                Part(
                    tool_request=ToolRequest(
                        name="getBalance", ref="getBalance-0", input={"account": "checking"}
                    ),
                    metadata={"thoughtSignature": "sig-A"},
                ),
                Part(
                    tool_request=ToolRequest(
                        name="getBalance", ref="getBalance-1", input={"account": "savings"}
                    )
                ),
            ],
        ),
        Message(
            role="tool",
            content=[
                Part(tool_response=ToolResponse(name="getBalance", ref="getBalance-0", output=1200.0)),
                Part(
                    tool_response=ToolResponse(name="getBalance", ref="getBalance-1", output={"balance": 300})
                ),
            ],
        ),
        user("Thanks"),
    ]
    cfg = {
        "temperature": 0.2,
        "maxOutputTokens": 100,
        "topK": 40,
        "stopSequences": ["END"],
        "seed": 3,
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
    }
    m = model(server, config={"topP": 0.9})
    await m.generate(GenerateRequest(messages=history, tools=TOOLS, config=cfg, tool_choice="required"))
    req = server.requests[0]
    assert str(req.url) == f"{BASE}/gemini-2.5-flash:generateContent"
    assert req.headers["x-goog-api-key"] == "g-test"
    assert server.bodies[0] == {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "Balances? And this:"},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {"name": "getBalance", "args": {"account": "checking"}},
                        "thoughtSignature": "sig-A",
                    },
                    {"functionCall": {"name": "getBalance", "args": {"account": "savings"}}},
                ],
            },
            {
                # the tool results and the next user text are one user turn
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "getBalance", "response": {"output": 1200.0}}},
                    {"functionResponse": {"name": "getBalance", "response": {"balance": 300}}},
                    {"text": "Thanks"},
                ],
            },
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "getBalance",
                        "description": "The balance of an account.",
                        "parametersJsonSchema": SCHEMA,
                    }
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "generationConfig": {
            "temperature": 0.2,
            "maxOutputTokens": 100,
            "topP": 0.9,
            "topK": 40,
            "stopSequences": ["END"],
            "seed": 3,
        },
    }


async def test_function_calls_get_unique_refs_and_signatures_round_trip() -> None:
    parts = [
        {
            "functionCall": {"name": "getBalance", "args": {"account": "checking"}},
            "thoughtSignature": "sig-1",
        },
        {"functionCall": {"name": "getBalance", "args": {"account": "savings"}}},
        {"functionCall": {"name": "transferMoney", "args": {"amount": 5}, "id": "fc-9"}},
    ]
    server = FakeServer(responses=[json_response(answer(parts)), json_response(answer([{"text": "ok"}]))])
    m = model(server)
    res = await m.generate(GenerateRequest(messages=[user("go")], tools=TOOLS))
    calls = [p.tool_request for p in res.message.content]  # type: ignore[union-attr]
    assert [(c.name, c.input) for c in calls] == [  # type: ignore[union-attr]
        ("getBalance", {"account": "checking"}),
        ("getBalance", {"account": "savings"}),
        ("transferMoney", {"amount": 5}),
    ]
    assert calls[2].ref == "fc-9"  # type: ignore[union-attr]  # an id Gemini sends is the ref
    # calls without an id get fresh refs: never <name>-0 again, so no answer can resume another turn
    minted = [c.ref for c in calls[:2]]  # type: ignore[union-attr]
    assert all(r is not None and re.fullmatch(r"getBalance-[0-9a-f]{12}", r) for r in minted)
    assert len(set(minted)) == 2
    assert res.finish_reason == "stop"
    assert res.usage == {"inputTokens": 8, "outputTokens": 5, "totalTokens": 13}
    # answers go back by name and order; the signature and Gemini's own id come back with them
    tool_msg = Message(
        role="tool",
        content=[
            Part(tool_response=ToolResponse(name=c.name, ref=c.ref, output={"n": i}))  # type: ignore[union-attr]
            for i, c in enumerate(calls)
        ],
    )
    await m.generate(GenerateRequest(messages=[user("go"), res.message, tool_msg], tools=TOOLS))  # type: ignore[list-item]
    sent = server.bodies[1]["contents"]
    assert sent[1]["parts"] == [
        {
            "functionCall": {"name": "getBalance", "args": {"account": "checking"}},
            "thoughtSignature": "sig-1",
        },
        {"functionCall": {"name": "getBalance", "args": {"account": "savings"}}},
        {"functionCall": {"name": "transferMoney", "args": {"amount": 5}, "id": "fc-9"}},
    ]
    assert sent[2]["parts"] == [
        {"functionResponse": {"name": "getBalance", "response": {"n": 0}}},
        {"functionResponse": {"name": "getBalance", "response": {"n": 1}}},
        {"functionResponse": {"name": "transferMoney", "response": {"n": 2}, "id": "fc-9"}},
    ]


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "blocked"),
        ("RECITATION", "blocked"),
        ("PROHIBITED_CONTENT", "blocked"),
        ("MALFORMED_FUNCTION_CALL", "other"),
        ("OTHER", "other"),
        (None, "unknown"),
    ],
)
async def test_finish_reasons(reason: str | None, expected: str) -> None:
    server = FakeServer(responses=[json_response(answer([{"text": "x"}], reason))])
    res = await model(server).generate(GenerateRequest(messages=[user("hi")]))
    assert res.finish_reason == expected


async def test_blocked_prompt_has_no_candidates() -> None:
    body = {
        "promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
    }
    server = FakeServer(responses=[json_response(body)])
    res = await model(server).generate(GenerateRequest(messages=[user("something bad")]))
    assert res.finish_reason == "blocked"
    assert res.finish_message == "prompt blocked: SAFETY"
    assert res.message.content == []  # type: ignore[union-attr]


async def test_stream_text_thoughts_and_calls() -> None:
    events = [
        answer([{"text": "thinking it over", "thought": True}], None, usage=False),
        answer([{"text": "Let me "}], None, usage=False),
        answer([{"text": "check."}], None, usage=False),
        answer(
            [
                {
                    "functionCall": {"name": "getBalance", "args": {"account": "checking"}},
                    "thoughtSignature": "s1",
                },
                {"functionCall": {"name": "getBalance", "args": {"account": "savings"}}},
            ],
            "STOP",
        ),
    ]
    server = FakeServer(responses=[sse_response(events, split=11)])
    res, chunks = await collect(model(server), GenerateRequest(messages=[user("balances")], tools=TOOLS))
    assert str(server.requests[0].url) == f"{BASE}/gemini-2.5-flash:streamGenerateContent?alt=sse"
    refs = [p.tool_request.ref for p in res.message.content if p.tool_request]  # type: ignore[union-attr]
    assert len(set(refs)) == 2 and all(r.startswith("getBalance-") for r in refs)  # type: ignore[union-attr]
    s1, s2 = refs
    assert [c.content[0].to_wire() for c in chunks] == [
        {"reasoning": "thinking it over"},
        {"text": "Let me "},
        {"text": "check."},
        {
            "toolRequest": {"name": "getBalance", "ref": s1, "input": {"account": "checking"}},
            "metadata": {"thoughtSignature": "s1"},
        },
        {"toolRequest": {"name": "getBalance", "ref": s2, "input": {"account": "savings"}}},
    ]
    assert res.to_wire()["message"]["content"] == [
        {"reasoning": "thinking it over"},
        {"text": "Let me check."},
        {
            "toolRequest": {"name": "getBalance", "ref": s1, "input": {"account": "checking"}},
            "metadata": {"thoughtSignature": "s1"},
        },
        {"toolRequest": {"name": "getBalance", "ref": s2, "input": {"account": "savings"}}},
    ]
    assert res.usage == {"inputTokens": 8, "outputTokens": 5, "totalTokens": 13}


async def test_missing_key_names_both_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(responses=[json_response(answer([{"text": "ok"}]))])
    m = GeminiModel("gemini-flash-latest", client=server.client())
    with pytest.raises(MissingApiKeyError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        await m.generate(GenerateRequest(messages=[user("hi")]))
    assert server.requests == []
    monkeypatch.setenv("GOOGLE_API_KEY", "g-env")
    await m.generate(GenerateRequest(messages=[user("hi")]))
    assert server.requests[0].headers["x-goog-api-key"] == "g-env"


def google_error(code: int, status: str, message: str, details: list[Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, "details": details or []}}


BAD_KEY = [
    {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID",
        "domain": "googleapis.com",
    }
]


@pytest.mark.parametrize(
    ("http", "body", "cls", "genkit_status", "attempts"),
    [
        (
            400,
            google_error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", BAD_KEY),
            AuthenticationError,
            "UNAUTHENTICATED",
            1,
        ),
        (
            401,
            google_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
            AuthenticationError,
            "UNAUTHENTICATED",
            1,
        ),
        (
            400,
            google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received."),
            BadRequestError,
            "INVALID_ARGUMENT",
            1,
        ),
        (
            429,
            google_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
            RateLimitError,
            "RESOURCE_EXHAUSTED",
            3,
        ),
        (
            500,
            google_error(500, "INTERNAL", "An internal error has occurred."),
            ModelServerError,
            "INTERNAL",
            3,
        ),
        (
            503,
            google_error(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
            OverloadedError,
            "UNAVAILABLE",
            3,
        ),
    ],
)
async def test_error_kinds(
    http: int, body: Any, cls: type[ModelError], genkit_status: str, attempts: int
) -> None:
    server = FakeServer(answer=lambda r, b: json_response(body, http))
    sleeps = Sleeps()
    with pytest.raises(cls) as info:
        await model(server, sleep=sleeps).generate(GenerateRequest(messages=[user("hi")]))
    assert info.value.status == genkit_status
    assert info.value.message == f"googleai: {body['error']['message']}"
    assert len(server.requests) == attempts


async def test_rate_limit_honours_retry_info_then_succeeds() -> None:
    """Gemini says how long to wait in the body (google.rpc.RetryInfo), not always in a header."""
    retry = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]
    limited = json_response(google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", retry), 429)
    server = FakeServer(responses=[limited, sse_response([answer([{"text": "hello"}])])])
    sleeps = Sleeps()
    res, _ = await collect(model(server, sleep=sleeps), GenerateRequest(messages=[user("hi")]))
    assert res.message.text == "hello"  # type: ignore[union-attr]
    assert sleeps.delays == [7.0]


async def test_connection_error_and_timeout() -> None:
    def refuse(request: httpx.Request, body: Any) -> httpx.Response:
        raise httpx.ConnectError("name resolution failed", request=request)

    server = FakeServer(answer=refuse)
    with pytest.raises(ModelConnectionError, match="name resolution failed"):
        await model(server, sleep=Sleeps()).generate(GenerateRequest(messages=[user("hi")]))
    assert len(server.requests) == 3

    def slow(request: httpx.Request, body: Any) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    server = FakeServer(answer=slow)
    with pytest.raises(ModelTimeoutError):
        await collect(model(server, sleep=Sleeps()), GenerateRequest(messages=[user("hi")]))
    assert len(server.requests) == 1


async def test_error_inside_the_stream() -> None:
    events = [answer([{"text": "par"}], None, usage=False), google_error(500, "INTERNAL", "stream broke")]
    server = FakeServer(responses=[sse_response(events)])
    with pytest.raises(ModelServerError, match="stream broke"):
        await collect(model(server, sleep=Sleeps()), GenerateRequest(messages=[user("hi")]))
    assert len(server.requests) == 1  # text already went out: not retried


# -- an agent turn with an interrupt, end to end -----------------------------------------


def bank_server(request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
    """First the two calls (no ids, as Gemini sends them), then a summary of the results."""
    assert request.url.path.endswith(":streamGenerateContent")
    assert body["systemInstruction"] == {"parts": [{"text": "You are a banking assistant."}]}
    assert body["generationConfig"] == {"temperature": 0}
    last = body["contents"][-1]
    results = [p["functionResponse"] for p in last["parts"] if "functionResponse" in p]
    if results:
        model_turn = body["contents"][-2]
        assert model_turn["role"] == "model" and model_turn["parts"][0] == {"text": "Checking first."}
        assert model_turn["parts"][2] == {
            "functionCall": {"name": "transferMoney", "args": {"amount": 500, "toAccount": "savings"}},
            "thoughtSignature": "sig-transfer",
        }
        by_name = {r["name"]: r["response"] for r in results}
        txn, balance = by_name["transferMoney"]["transactionId"], by_name["getBalance"]["output"]
        text = f"Done: {txn}; checking had ${balance:.0f}."
        events = [answer([{"text": text[:6]}], None, usage=False), answer([{"text": text[6:]}], "STOP")]
    else:
        events = [
            answer([{"text": "Checking first."}], None, usage=False),
            answer(
                [
                    {"functionCall": {"name": "getBalance", "args": {"account": "checking"}}},
                    {
                        "functionCall": {
                            "name": "transferMoney",
                            "args": {"amount": 500, "toAccount": "savings"},
                        },
                        "thoughtSignature": "sig-transfer",
                    },
                ],
                "STOP",
            ),
        ]
    return sse_response(events)


async def test_agent_turn_with_interrupt_end_to_end() -> None:
    server = FakeServer(answer=bank_server)
    final, accounts, streamed = await run_banking_flow(model(server))
    assert final.finish_reason == "stop"
    assert final.text == "Done: txn-0001; checking had $1200."
    assert "".join(streamed) == final.text
    assert accounts == {"checking": 700.0, "savings": 800.0}
    assert len(server.requests) == 2


async def test_model_error_fails_the_turn_gracefully() -> None:
    body = google_error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", BAD_KEY)
    server = FakeServer(answer=lambda r, b: json_response(body, 400))
    agent = nba.define_agent("g", model=model(server), store=nba.InMemorySessionStore())
    out = await agent.run_text("hi")
    assert out.finish_reason == "failed"
    assert out.error is not None and out.error.status == "UNAUTHENTICATED"
    assert "API key not valid" in out.error.message


async def test_registry_name_and_missing_key_in_a_turn() -> None:
    agent = nba.define_agent("g2", model="googleai/gemini-flash-latest", store=nba.InMemorySessionStore())
    out = await agent.run_text("hi")
    assert out.finish_reason == "failed" and out.error is not None
    assert out.error.status == "UNAUTHENTICATED" and "GEMINI_API_KEY" in out.error.message
