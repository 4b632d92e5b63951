"""The shared plumbing: SSE parsing, error bodies, Retry-After, backoff, retries."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx
import pytest

from nb_agents.errors import NbAgentsError
from nb_agents.frames import FrameError, ServerSentEvent, SseParser
from nb_agents.models.errors import (
    AuthenticationError,
    BadRequestError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelPermissionDeniedError,
    OverloadedError,
    RateLimitError,
    error_for_http_status,
)
from nb_agents.models.http import ProviderClient, read_error

from .fakes import FakeServer, Sleeps, json_response

pytestmark = pytest.mark.anyio


def test_sse_parser_events_comments_and_multiline_data() -> None:
    lines = [
        ": keep-alive",
        "event: message_start",
        'data: {"a":',
        "data: 1}",
        "",
        "data: [DONE]",
        "",
        "retry: 10",
        "",
    ]
    parser = SseParser()
    events = [e for e in (parser.feed(line) for line in lines) if e is not None]
    assert events == [ServerSentEvent("message_start", '{"a":\n1}'), ServerSentEvent(None, "[DONE]")]
    assert events[0].json() == {"a": 1}
    parser.feed("data: trailing")
    assert parser.flush() == ServerSentEvent(None, "trailing")  # a stream may end without a blank line
    with pytest.raises(FrameError, match="not JSON"):
        ServerSentEvent(None, "{not json").json()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"error": {"message": "bad key", "type": "invalid_request_error", "code": "invalid_api_key"}},
            ("bad key", "invalid_request_error"),
        ),
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ("Overloaded", "overloaded_error"),
        ),
        (
            {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}},
            ("quota", "RESOURCE_EXHAUSTED"),
        ),
        (
            [{"error": {"code": 400, "message": "in a list", "status": "INVALID_ARGUMENT"}}],
            ("in a list", "INVALID_ARGUMENT"),
        ),
        ({"error": "model 'x' not found"}, ("model 'x' not found", None)),
        ("<html>bad gateway</html>", ("fallback", None)),
    ],
)
def test_read_error_understands_each_envelope(body: Any, expected: tuple[str, str | None]) -> None:
    assert read_error(body, "fallback") == expected


@pytest.mark.parametrize(
    ("status", "kind", "cls", "genkit"),
    [
        (401, None, AuthenticationError, "UNAUTHENTICATED"),
        (403, None, ModelPermissionDeniedError, "PERMISSION_DENIED"),
        (404, None, ModelNotFoundError, "NOT_FOUND"),
        (422, None, BadRequestError, "INVALID_ARGUMENT"),
        (429, None, RateLimitError, "RESOURCE_EXHAUSTED"),
        (529, None, OverloadedError, "UNAVAILABLE"),
        (429, "overloaded_error", OverloadedError, "UNAVAILABLE"),
        (400, "API_KEY_INVALID", AuthenticationError, "UNAUTHENTICATED"),
    ],
)
def test_status_mapping(status: int, kind: str | None, cls: type[ModelError], genkit: str) -> None:
    err = error_for_http_status(status, "msg", provider="p", error_type=kind)
    assert type(err) is cls and err.status == genkit and isinstance(err, NbAgentsError)
    assert err.to_wire()["status"] == genkit


async def test_retry_after_forms_and_backoff_with_jitter() -> None:
    date = email.utils.formatdate(time.time() + 20, usegmt=True)
    responses = [
        json_response({"error": {"message": "a"}}, 429, headers={"retry-after-ms": "1500"}),
        json_response({"error": {"message": "b"}}, 429, headers={"retry-after": date}),
        json_response({"error": {"message": "c"}}, 500),
        json_response({"error": {"message": "d"}}, 502),
        json_response({"ok": True}),
    ]
    server = FakeServer(responses=responses)
    sleeps = Sleeps()
    http = ProviderClient(provider="p", client=server.client(), max_retries=4, sleep=sleeps)
    assert await http.post_json("https://example.invalid/x", {"q": 1}, {}) == {"ok": True}
    assert sleeps.delays[0] == 1.5
    assert 15 < sleeps.delays[1] <= 20
    # no Retry-After: exponential backoff (2s and 4s on the third and fourth retry), jittered to half..all
    assert 0.5 * 2**2 / 2 <= sleeps.delays[2] <= 0.5 * 2**2
    assert 0.5 * 2**3 / 2 <= sleeps.delays[3] <= 0.5 * 2**3


async def test_a_retry_after_too_long_is_not_waited_for() -> None:
    server = FakeServer(
        responses=[
            json_response({"error": {"message": "come back tomorrow"}}, 429, headers={"retry-after": "86400"})
        ]
    )
    sleeps = Sleeps()
    http = ProviderClient(provider="p", client=server.client(), sleep=sleeps)
    with pytest.raises(RateLimitError) as info:
        await http.post_json("https://example.invalid/x", {}, {})
    assert info.value.retry_after == 86400.0 and sleeps.delays == []


async def test_non_json_error_body_keeps_the_text() -> None:
    server = FakeServer(responses=[httpx.Response(404, text="no such route")])
    with pytest.raises(ModelNotFoundError, match="HTTP 404 Not Found: no such route"):
        await ProviderClient(provider="p", client=server.client()).post_json(
            "https://example.invalid/x", {}, {}
        )


async def test_stream_events_hands_back_json_when_the_server_does_not_stream() -> None:
    server = FakeServer(responses=[json_response({"whole": "answer"})])
    seen: list[ServerSentEvent] = []

    async def handle(event: ServerSentEvent) -> None:
        seen.append(event)

    http = ProviderClient(provider="p", client=server.client())
    assert await http.stream_events("https://example.invalid/x", {}, {}, handle) == {"whole": "answer"}
    assert seen == []


async def test_retrying_only_retries_retryable_errors() -> None:
    calls: list[int] = []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise ModelConnectionError("refused", provider="p")
        raise BadRequestError("bad", provider="p", http_status=400)

    http = ProviderClient(provider="p", sleep=Sleeps())
    with pytest.raises(BadRequestError):
        await http.retrying(attempt)
    assert len(calls) == 2
    with pytest.raises(ValueError, match="max_retries"):
        ProviderClient(provider="p", max_retries=-1)
