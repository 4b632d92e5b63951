"""The provider template: the constructor keywords and the generate/stream/retry skeleton.

The keyword table is the three constructors' signatures from before they
shared `HttpModel`; the skeleton tests run the same cases on every provider.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from nb_agents.models._provider import HttpModel, HttpOptions
from nb_agents.models.anthropic import AnthropicModel
from nb_agents.models.errors import ModelServerError
from nb_agents.models.gemini import GeminiModel
from nb_agents.models.openai_compat import OpenAICompatModel
from nb_agents.types import GenerateRequest, Message, ModelResponseChunk, Part

from .fakes import FakeServer, Sleeps, json_response, sse_response

pytestmark = pytest.mark.anyio

_SHARED = {
    "base_url": None,
    "api_key": None,
    "client": None,
    "timeout": 120.0,
    "max_retries": 2,
    "config": None,
    "headers": None,
    "sleep": None,
}
KEYWORDS: dict[type[HttpModel], dict[str, Any]] = {
    OpenAICompatModel: {
        **_SHARED,
        "provider": "openai",
        "max_tokens_field": None,
        "stream_usage": True,
    },
    GeminiModel: _SHARED,
    AnthropicModel: {**_SHARED, "max_tokens": 4096},
}


def keywords(cls: type[HttpModel]) -> dict[str, Any]:
    """The keywords `cls(name, ...)` takes and their defaults (``**options`` are `HttpModel`'s)."""
    params = list(inspect.signature(cls).parameters.values())
    assert params[0].name == "name" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    out: dict[str, Any] = {}
    for p in params[1:]:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            out.update(keywords(HttpModel))
        else:
            assert p.kind is inspect.Parameter.KEYWORD_ONLY, p
            out[p.name] = p.default
    return out


@pytest.mark.parametrize("cls", list(KEYWORDS))
def test_every_keyword_and_default_is_kept(cls: type[HttpModel]) -> None:
    assert keywords(cls) == KEYWORDS[cls]


def test_http_options_are_the_base_keywords() -> None:
    assert set(HttpOptions.__annotations__) == set(keywords(HttpModel)) == set(_SHARED)


@pytest.mark.parametrize("cls", list(KEYWORDS))
def test_shared_keywords_are_handled_by_the_base(cls: type[HttpModel]) -> None:
    default = cls("m")
    assert default.http.max_retries == 2 and default.http.client is None
    assert default.http.timeout == httpx.Timeout(120.0, connect=10.0)
    assert (default.config, default.headers, default.explicit_api_key) == ({}, {}, None)
    client = httpx.AsyncClient()
    sleeps = Sleeps()
    m = cls(
        "m",
        base_url="http://localhost:1/v1/",
        api_key="k",
        client=client,
        timeout=5.0,
        max_retries=0,
        config={"temperature": 0},
        headers={"X-A": "1"},
        sleep=sleeps,
    )
    assert (m.base_url, m.api_key(), m.http.client, m.http.max_retries) == (
        "http://localhost:1/v1",
        "k",
        client,
        0,
    )
    assert m.http.timeout == httpx.Timeout(5.0, connect=5.0) and m.http.sleep is sleeps
    assert (m.config, m.headers) == ({"temperature": 0}, {"X-A": "1"})


# -- the skeleton, on every provider ---------------------------------------------------


@dataclass
class Wire:
    """One provider's answers: a whole one, a stream, and a stream that dies after its text."""

    build: Callable[..., HttpModel]
    whole: Callable[[str], dict[str, Any]]
    stream: Callable[[str], httpx.Response]
    broken: Callable[[str], httpx.Response]
    whole_in_stream_chunks: list[str]  # what a plain JSON answer to a stream request streams


def _openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _gemini(text: str) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}]}


def _anthropic_events(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]


WIRES = {
    "openai": Wire(
        build=lambda **kw: OpenAICompatModel("gpt-4o-mini", **kw),
        whole=lambda t: {
            "choices": [{"message": {"role": "assistant", "content": t}, "finish_reason": "stop"}]
        },
        stream=lambda t: sse_response([_openai_chunk({"content": t}), _openai_chunk({}, "stop")], done=True),
        broken=lambda t: sse_response(
            [_openai_chunk({"content": t}), {"error": {"message": "upstream died", "type": "server_error"}}]
        ),
        whole_in_stream_chunks=[],
    ),
    "googleai": Wire(
        build=lambda **kw: GeminiModel("gemini-flash-latest", **kw),
        whole=_gemini,
        stream=lambda t: sse_response([_gemini(t)]),
        broken=lambda t: sse_response(
            [_gemini(t), {"error": {"code": 500, "message": "upstream died", "status": "INTERNAL"}}]
        ),
        whole_in_stream_chunks=["whole"],
    ),
    "anthropic": Wire(
        build=lambda **kw: AnthropicModel("claude-haiku-4-5", **kw),
        whole=lambda t: {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": t}],
            "stop_reason": "end_turn",
        },
        stream=lambda t: sse_response(_anthropic_events(t), named=True),
        broken=lambda t: sse_response(
            [
                *_anthropic_events(t)[:3],
                {"type": "error", "error": {"type": "api_error", "message": "upstream died"}},
            ],
            named=True,
        ),
        whole_in_stream_chunks=[],
    ),
}
REQUEST = GenerateRequest(messages=[Message(role="user", content=[Part(text="hi")])])


async def collect(m: HttpModel) -> tuple[str | None, list[str]]:
    chunks: list[ModelResponseChunk] = []

    async def sink(c: ModelResponseChunk) -> None:
        chunks.append(c)

    res = await m.generate(REQUEST, sink)
    return (res.message.text if res.message else None), [c.text for c in chunks]


@pytest.mark.parametrize("provider", list(WIRES))
async def test_whole_and_streamed_answers(provider: str) -> None:
    wire = WIRES[provider]
    server = FakeServer(responses=[json_response(wire.whole("plain")), wire.stream("streamed")])
    m = wire.build(api_key="k", client=server.client())
    res = await m.generate(REQUEST)
    assert res.message is not None and res.message.text == "plain"
    assert await collect(m) == ("streamed", ["streamed"])
    assert [b.get("stream") for b in server.bodies] == (
        [None, None] if provider == "googleai" else [None, True]  # Gemini streams by URL
    )


@pytest.mark.parametrize("provider", list(WIRES))
async def test_a_server_that_ignores_stream(provider: str) -> None:
    wire = WIRES[provider]
    server = FakeServer(responses=[json_response(wire.whole("whole"))])
    m = wire.build(api_key="k", client=server.client())
    assert await collect(m) == ("whole", wire.whole_in_stream_chunks)


@pytest.mark.parametrize("provider", list(WIRES))
async def test_a_stream_is_retried_before_output_not_after(provider: str) -> None:
    wire = WIRES[provider]
    limited = json_response({"error": {"message": "slow down"}}, 429, headers={"retry-after": "1"})
    server = FakeServer(responses=[limited, wire.stream("hi")])
    sleeps = Sleeps()
    assert await collect(wire.build(api_key="k", client=server.client(), sleep=sleeps)) == ("hi", ["hi"])
    assert sleeps.delays == [1.0] and len(server.requests) == 2
    # an error after text went out is raised, never retried (the text would show twice)
    server = FakeServer(responses=[wire.broken("partial"), wire.stream("again")])
    with pytest.raises(ModelServerError, match="upstream died"):
        await collect(wire.build(api_key="k", client=server.client(), sleep=sleeps))
    assert len(server.requests) == 1 and sleeps.delays == [1.0]
