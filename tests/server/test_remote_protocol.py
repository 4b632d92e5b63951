"""What `remote_agent` sends and how it reads every server's answers, on `httpx.MockTransport`.

Genkit's servers differ in small ways (express writes ``error:`` frames, FastAPI
nests errors, Go answers plain text); the client reads them all, and a stream that
stops without a terminal frame raises instead of hanging.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

import nb_agents as nba
from nb_agents.errors import NbAgentsError, PermissionDeniedError
from nb_agents.remote import remote_agent

pytestmark = pytest.mark.anyio

URL = "http://agents.test/api/bank"
RESULT = {
    "sessionId": "s1",
    "snapshotId": "snap1",
    "finishReason": "stop",
    "message": {"role": "model", "content": [{"text": "hi"}]},
}


def sse(*payloads: Any) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads)


def transport(
    answer: Callable[[httpx.Request], httpx.Response], seen: list[httpx.Request]
) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer(request)

    return httpx.MockTransport(handler)


def agent_with(
    answer: Callable[[httpx.Request], httpx.Response], **kwargs: Any
) -> tuple[Any, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    client = httpx.AsyncClient(transport=transport(answer, seen))
    return remote_agent(URL, client=client, **kwargs), seen


def stream_of(body: bytes, status: int = 200, **headers: str) -> Callable[[httpx.Request], httpx.Response]:
    return lambda request: httpx.Response(status, content=body, headers=headers)


async def test_a_turn_is_one_streamed_post_of_data_and_init() -> None:
    remote, seen = agent_with(
        stream_of(sse({"message": {"turnEnd": {"finishReason": "stop"}}}, {"result": RESULT}))
    )
    res = await remote.chat().send("hello")
    assert res.text == "hi" and res.snapshot_id == "snap1"
    [request] = seen
    assert request.method == "POST" and str(request.url) == URL
    assert request.headers["accept"] == "text/event-stream"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == {
        "data": {"message": {"role": "user", "content": [{"text": "hello"}]}},
        "init": {},
    }


async def test_init_follows_the_js_client_snapshot_then_state_verbatim() -> None:
    state = {
        "sessionId": "s1",
        "messages": [{"role": "user", "content": [{"text": "a"}]}],
        "custom": {"n": 1},
        "signature": "abc123",
        "futureField": {"kept": True},
    }
    answers = iter(
        [
            sse({"result": {"sessionId": "s1", "state": state, "finishReason": "stop"}}),
            sse({"result": {"sessionId": "s1", "state": state, "finishReason": "stop"}}),
            sse({"result": RESULT}),
            sse({"result": RESULT}),
        ]
    )
    remote, seen = agent_with(lambda request: httpx.Response(200, content=next(answers)))
    client_chat = remote.chat()
    await client_chat.send("one")
    await client_chat.send("two")
    server_chat = remote.chat(session_id="s1")
    await server_chat.send("three")
    await server_chat.send("four")
    inits = [json.loads(r.content)["init"] for r in seen]
    assert inits == [{}, {"state": state}, {"sessionId": "s1"}, {"snapshotId": "snap1"}]


async def test_headers_may_be_a_mapping_or_a_sync_or_async_function() -> None:
    tokens = iter(["t1", "t2"])

    async def fresh_token() -> dict[str, str]:
        return {"Authorization": f"Bearer {next(tokens)}"}

    for option, expected in [
        ({"Authorization": "Bearer static"}, ["Bearer static", "Bearer static"]),
        (lambda: {"Authorization": "Bearer fn"}, ["Bearer fn", "Bearer fn"]),
        (fresh_token, ["Bearer t1", "Bearer t2"]),
    ]:
        answers = iter([sse({"result": RESULT}), json.dumps({"result": {"snapshotId": "x"}}).encode()])
        remote, seen = agent_with(lambda request: httpx.Response(200, content=next(answers)), headers=option)
        await remote.run_text("hi")
        assert await remote.abort("x") is None
        assert [r.headers["authorization"] for r in seen] == expected


async def test_chunks_are_applied_live_and_frames_may_split_anywhere() -> None:
    body = sse(
        {"message": {"customPatch": [{"op": "replace", "path": "", "value": {"n": 1}}]}},
        {"message": {"modelChunk": {"role": "model", "content": [{"text": "Hel"}]}}},
        {"message": {"modelChunk": {"content": [{"text": "lo"}]}}},
        {"message": {"customPatch": [{"op": "replace", "path": "/n", "value": 2}]}},
        {"result": RESULT},
    ).replace(b"\n", b"\r\n")

    async def dribble() -> AsyncIterator[bytes]:
        for i in range(0, len(body), 7):
            yield body[i : i + 7]

    remote, _ = agent_with(lambda request: httpx.Response(200, content=dribble()))
    turn = remote.chat().send_stream("hi")
    seen = [(chunk.accumulated_text, chunk.custom) async for chunk in turn]
    assert seen == [("", {"n": 1}), ("Hel", None), ("Hello", None), ("Hello", {"n": 2})]
    assert (await turn.response).text == "hi"


@pytest.mark.parametrize(
    ("body", "kind", "status", "message"),
    [
        (sse({"error": {"status": "NOT_FOUND", "message": "gone"}}), nba.NotFoundError, "NOT_FOUND", "gone"),
        (  # express: an "error:" line, the status also in front of the message
            b'error: {"error":{"status":"INVALID_ARGUMENT","message":"INVALID_ARGUMENT: bad input"}}\n\n',
            nba.InvalidArgumentError,
            "INVALID_ARGUMENT",
            "bad input",
        ),
        (  # FastAPI nests the error once more
            sse({"error": {"error": {"status": "FAILED_PRECONDITION", "message": "not now"}}}),
            nba.FailedPreconditionError,
            "FAILED_PRECONDITION",
            "not now",
        ),
        (sse({"error": "PERMISSION_DENIED: forged"}), PermissionDeniedError, "PERMISSION_DENIED", "forged"),
        (
            sse({"message": {"turnEnd": {}}}),
            NbAgentsError,
            "UNAVAILABLE",
            f"the agent at {URL} closed the stream without a result or an error frame",
        ),
        (b"data: {not json\n\n", NbAgentsError, "INTERNAL", "the agent sent a frame that is not JSON"),
        (sse({"surprise": 1}), NbAgentsError, "INTERNAL", f"{URL} sent a frame this client does not know"),
    ],
    ids=[
        "data-error",
        "express-error",
        "fastapi-nested",
        "string",
        "no-terminal-frame",
        "not-json",
        "unknown",
    ],
)
async def test_stream_errors_raise_the_error_of_their_status(
    body: bytes, kind: type, status: str, message: str
) -> None:
    remote, _ = agent_with(stream_of(body))
    with pytest.raises(kind) as info:
        await remote.chat().send("hi")
    assert info.value.status == status
    assert info.value.message.startswith(message)


@pytest.mark.parametrize(
    ("code", "body", "kind", "status", "message"),
    [
        (
            403,
            b'{"status":"PERMISSION_DENIED","message":"no"}',
            PermissionDeniedError,
            "PERMISSION_DENIED",
            "no",
        ),
        (
            400,
            b'{"error":{"status":"INVALID_ARGUMENT","message":"bad"}}',
            nba.InvalidArgumentError,
            "INVALID_ARGUMENT",
            "bad",
        ),
        (
            413,
            b'{"status":"RESOURCE_EXHAUSTED","message":"too big"}',
            NbAgentsError,
            "RESOURCE_EXHAUSTED",
            "too big",
        ),
        (
            400,
            b"snapshot is required\n",
            nba.InvalidArgumentError,
            "INVALID_ARGUMENT",
            f"{URL} answered HTTP 400: snapshot is required",
        ),
        (500, b"", nba.InternalError, "INTERNAL", f"{URL} answered HTTP 500"),
        (404, b'{"message":"Not Found"}', nba.NotFoundError, "NOT_FOUND", "Not Found"),
    ],
    ids=["json", "nested", "413", "go-plain-text", "empty-500", "message-only"],
)
async def test_non_200_answers_raise_the_error_of_their_body_or_code(
    code: int, body: bytes, kind: type, status: str, message: str
) -> None:
    remote, _ = agent_with(stream_of(body, code))
    with pytest.raises(kind) as info:
        await remote.run_text("hi")
    assert (info.value.status, info.value.message) == (status, message)


async def test_a_plain_json_answer_to_a_streamed_request_is_read_too() -> None:
    remote, _ = agent_with(
        stream_of(json.dumps({"result": RESULT}, indent=2).encode(), **{"content-type": "application/json"})
    )
    assert (await remote.run_text("hi")).snapshot_id == "snap1"


async def test_companions_post_data_and_read_result() -> None:
    snapshot = {"snapshotId": "snap1", "sessionId": "s1", "status": "completed", "state": {"messages": []}}

    def answer(request: httpx.Request) -> httpx.Response:
        data = json.loads(request.content)["data"]
        if request.url.path == "/snap":
            if data == {"snapshotId": "snap1"} or data == {"sessionId": "s1"}:
                return httpx.Response(200, json={"result": snapshot})
            return httpx.Response(404)  # FastAPI 0.12: a bare 404
        return httpx.Response(200, json={"result": {"snapshotId": data["snapshotId"], "status": "pending"}})

    remote, seen = agent_with(
        answer, get_snapshot_url="http://other.test/snap", abort_url="http://other.test/abort"
    )
    assert (await remote.get_snapshot("snap1")).status == "completed"  # type: ignore[union-attr]
    assert (await remote.get_snapshot(session_id="s1")).snapshot_id == "snap1"  # type: ignore[union-attr]
    assert await remote.get_snapshot("other") is None
    assert await remote.abort("snap1") == "pending"
    assert [str(r.url) for r in seen] == ["http://other.test/snap"] * 3 + ["http://other.test/abort"]
    assert json.loads(seen[-1].content) == {"data": {"snapshotId": "snap1"}}
    default = remote_agent(URL)
    assert (default.get_snapshot_url, default.abort_url) == (URL + "/getSnapshot", URL + "/abort")


async def test_an_unreachable_server_is_unavailable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    remote, _ = agent_with(refuse)
    with pytest.raises(NbAgentsError) as info:
        await remote.chat().send("hi")
    assert (
        info.value.status == "UNAVAILABLE" and f"could not talk to the agent at {URL}" in info.value.message
    )
    with pytest.raises(NbAgentsError, match="could not talk"):
        await remote.get_snapshot("x")
