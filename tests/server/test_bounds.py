"""Bad input is refused with a clear error before it reaches an agent, and the store is untouched."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

import nb_agents as nba
from nb_agents.testing import FunctionModel

pytestmark = pytest.mark.anyio

LIMIT = 4096
HELLO = {"message": {"role": "user", "content": [{"text": "hello"}]}}


@pytest.fixture
def bounded(serve) -> tuple[str, nba.InMemorySessionStore, list[int]]:
    """A store-backed agent behind a server with small limits; the model counts its calls."""
    calls: list[int] = []

    def reply(req: nba.GenerateRequest) -> str:
        calls.append(1)
        return "ok"

    store = nba.InMemorySessionStore()
    agent = nba.define_agent("bank", model=FunctionModel(reply), store=store)
    return serve(agent, max_body_bytes=LIMIT, max_parts=8) + "/bank", store, calls


async def send(url: str, **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.post(url, **kwargs)


async def assert_untouched(store: nba.InMemorySessionStore, calls: list[int]) -> None:
    assert await store.session_ids() == []
    assert calls == []


def parts(n: int) -> dict[str, Any]:
    return {"message": {"role": "user", "content": [{"text": str(i)} for i in range(n)]}}


@pytest.mark.parametrize("verb", ["", "/getSnapshot", "/abort"])
async def test_a_body_over_the_limit_is_413_from_its_content_length(bounded, verb: str) -> None:
    url, store, calls = bounded
    res = await send(
        url + verb, json={"data": {"message": {"role": "user", "content": [{"text": "x" * LIMIT}]}}}
    )
    assert res.status_code == 413
    body = res.json()
    assert body["status"] == "RESOURCE_EXHAUSTED"
    assert f"is larger than this server accepts ({LIMIT} bytes, max_body_bytes)" in body["message"]
    await assert_untouched(store, calls)


async def test_a_chunked_body_over_the_limit_is_cut_off_while_reading(bounded) -> None:
    url, store, calls = bounded

    async def body() -> AsyncIterator[bytes]:
        yield b'{"data": {"message": {"role": "user", "content": [{"text": "'
        for _ in range(4):
            yield b"x" * 1024  # no Content-Length: the server counts as it reads

    res = await send(url, content=body(), headers={"content-type": "application/json"})
    assert res.status_code == 413
    assert res.json()["message"].startswith("the request body (more) is larger than this server accepts")
    await assert_untouched(store, calls)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"data": {"message": ', "the request body is not valid JSON: Expecting value (line 1, column 22)"),
        (b"", 'the request body is empty; send a JSON object like {"data": {...}, "init": {}}'),
        (b"[1, 2]", "the request body must be a JSON object, got an array"),
        (b"\xff\xfe{}", "the request body is not UTF-8 encoded JSON"),
        (b"[" * 2000 + b"]" * 2000, "the request body is not valid JSON: it is nested too deeply"),
    ],
    ids=["truncated", "empty", "array", "not-utf8", "deep"],
)
async def test_malformed_json_is_400_naming_the_problem(bounded, raw: bytes, message: str) -> None:
    url, store, calls = bounded
    res = await send(url, content=raw, headers={"content-type": "application/json"})
    assert res.status_code == 400
    assert res.json() == {"status": "INVALID_ARGUMENT", "message": message}
    await assert_untouched(store, calls)


@pytest.mark.parametrize("verb", ["", "/getSnapshot"])
async def test_unknown_top_level_fields_are_400(bounded, verb: str) -> None:
    url, store, calls = bounded
    res = await send(url + verb, json={"data": HELLO, "init": {}, "input": {}, "extra": 1})
    assert res.status_code == 400
    fields = "'data', 'init', 'config'" if verb == "" else "'data', 'init'"
    assert res.json() == {
        "status": "INVALID_ARGUMENT",
        "message": f"unknown top-level field(s) 'extra', 'input'; this request body takes only {fields}",
    }
    res = await send(url + verb, json={"init": {}})
    assert res.status_code == 400 and res.json()["message"] == "the request body has no 'data' field"
    await assert_untouched(store, calls)


async def test_too_many_parts_is_400(bounded) -> None:
    url, store, calls = bounded
    ok = await send(url + "?session_id=probe", json={"data": parts(8), "init": {}})
    assert ok.status_code == 200  # exactly the limit is fine
    sessions_before = await store.session_ids()
    res = await send(url, json={"data": parts(9), "init": {}})
    assert res.status_code == 400
    assert res.json() == {
        "status": "INVALID_ARGUMENT",
        "message": "the request carries 9 parts (message, resume answers and state together); "
        "this server accepts at most 8 (max_parts)",
    }
    respond = [{"toolResponse": {"name": "t", "ref": str(i), "output": i}} for i in range(9)]
    res = await send(url, json={"data": {"resume": {"respond": respond}}, "init": {}})
    assert res.status_code == 400 and "carries 9 parts" in res.json()["message"]
    assert await store.session_ids() == sessions_before
    assert len(calls) == 1


async def test_state_parts_count_too(serve) -> None:
    agent = nba.define_agent("cli", model=FunctionModel(lambda r: "ok"))
    url = serve(agent, max_parts=4) + "/cli"
    history = [{"role": "user", "content": [{"text": "a"}, {"text": "b"}]}] * 2
    res = await send(url, json={"data": HELLO, "init": {"state": {"messages": history}}})
    assert res.status_code == 400 and "carries 5 parts" in res.json()["message"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"data": {"message": {"role": "robot", "content": [{"text": 1}]}}},
            "invalid data (AgentInput): data.message.role: Input should be 'user', 'model', 'tool' or "
            "'system'; data.message.content[0].text: Input should be a valid string",
        ),
        ({"data": None}, "invalid data (AgentInput): data: Input should be a valid dictionary"),
        (
            {"data": HELLO, "init": {"snapshotId": 7}},
            "invalid init (AgentInit): init.snapshotId: Input should be a valid string",
        ),
    ],
    ids=["bad-message", "null-data", "bad-init"],
)
async def test_values_that_do_not_validate_are_400_naming_the_fields(
    bounded, body: Any, message: str
) -> None:
    url, store, calls = bounded
    res = await send(url, json=body)
    assert res.status_code == 400
    assert res.json()["status"] == "INVALID_ARGUMENT"
    assert res.json()["message"].startswith(message)
    await assert_untouched(store, calls)


@pytest.mark.parametrize(
    "data", [{"snapshotId": ""}, {"snapshotId": 3}, "abc"], ids=["empty", "number", "not-an-object"]
)
async def test_companion_lookups_are_validated(bounded, data: Any) -> None:
    url, store, calls = bounded
    res = await send(url + "/getSnapshot", json={"data": data})
    assert res.status_code == 400 and res.json()["status"] == "INVALID_ARGUMENT"
    res = await send(url + "/abort", json={"data": data})
    assert res.status_code == 400 and res.json()["status"] == "INVALID_ARGUMENT"
    await assert_untouched(store, calls)
