"""The turn route's lean ASGI path answers as Starlette's routing did (`nb_agents.server.lean`).

Driven in-process through ``httpx.ASGITransport``: CORS on a turn, middleware added
after `create_app` (it must see every turn), a trailing slash and other methods.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

import nb_agents as nba
from nb_agents.server import create_app
from nb_agents.testing import FunctionModel

pytestmark = pytest.mark.anyio

HELLO = {"data": {"message": {"role": "user", "content": [{"text": "hi"}]}}, "init": {}}


def echo() -> nba.Agent:
    return nba.define_agent(
        "echo", model=FunctionModel(lambda req: "hello"), store=nba.InMemorySessionStore()
    )


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.mark.parametrize("stream", [False, True])
async def test_a_turn_answers_with_cors_headers_for_an_allowed_origin(stream: bool) -> None:
    app = create_app(echo(), cors_origins=["https://app.example"])
    extra = {"Accept": "text/event-stream"} if stream else {}
    async with client(app) as c:
        ok = await c.post("/echo", json=HELLO, headers={"Origin": "https://app.example", **extra})
        bad = await c.post("/echo", json=HELLO, headers={"Origin": "https://evil.example", **extra})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "https://app.example"
    assert "access-control-allow-origin" not in bad.headers
    assert ('"finishReason":"stop"' in ok.text) and ('"finishReason":"stop"' in bad.text)


async def test_middleware_added_after_create_app_sees_every_turn() -> None:
    app = create_app(echo())
    seen: list[str] = []

    async def gate(request: Request, call_next: Any) -> Response:
        seen.append(request.url.path)
        if request.headers.get("x-pass") != "yes":
            return JSONResponse({"status": "UNAUTHENTICATED", "message": "no"}, status_code=401)
        return await call_next(request)  # type: ignore[no-any-return]

    app.add_middleware(BaseHTTPMiddleware, dispatch=gate)
    async with client(app) as c:
        refused = await c.post("/echo", json=HELLO)
        passed = await c.post("/echo", json=HELLO, headers={"x-pass": "yes"})
    assert refused.status_code == 401
    assert passed.status_code == 200 and passed.json()["result"]["finishReason"] == "stop"
    assert seen == ["/echo", "/echo"]


async def test_other_methods_and_paths_go_through_starlette() -> None:
    app = create_app(echo(), prefix="/api")
    async with client(app) as c:
        get = await c.get("/api/echo")
        slash = await c.post("/api/echo/", json=HELLO, follow_redirects=False)
        unknown = await c.post("/api/nobody", json=HELLO)
        turn = await c.post("/api/echo?stream=true", json=HELLO)
    assert get.status_code == 405 and get.json()["status"] == "UNIMPLEMENTED"
    assert slash.status_code in (307, 405)
    assert unknown.status_code == 404 and "echo" in unknown.json()["message"]
    assert turn.status_code == 200 and turn.text.startswith("data: ")
