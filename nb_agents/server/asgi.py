"""Raw ASGI I/O for the turn routes: a request's headers, its body within bounds, a JSON answer.

The turn routes are served without Starlette's Request and Response objects
(`nb_agents.server.lean`); what they read and write goes through here, with the
same bounds and the same bytes as before:

* `read_asgi_body`: the body, refused with 413 as soon as it is known to be
  larger than the limit (``Content-Length``, then while reading), 408 when it
  has not all arrived `timeout` seconds after reading began, ``CANCELLED``
  when the client went away while sending it;
* `send_json`: a JSON answer rendered as Starlette's ``JSONResponse`` renders
  it (compact, UTF-8, ``allow_nan=False``; ``content-length`` then
  ``content-type``);
* `step`: start an ASGI ``receive``/``send`` coroutine at once, in the caller's
  task. Most of them complete without waiting (a body that has arrived, a write
  to a socket that is not full); only one that has to wait gets a deadline
  (`resume` it under ``asyncio.timeout``), so a request costs no timer per read
  or write.
"""

from __future__ import annotations

import asyncio
import json
import types
from collections.abc import Awaitable, Generator, MutableMapping
from typing import Any

from pydantic import BaseModel
from starlette.types import Receive, Send

from ..errors import RequestError

__all__ = [
    "Started",
    "header",
    "read_asgi_body",
    "render_json",
    "resume",
    "send_json",
    "send_json_bytes",
    "step",
    "too_large",
    "wire_json",
]

Pending = Any  # what a coroutine yields to its task when it has to wait (an asyncio future)


class Started:
    """An awaitable `step` began: ``done`` with its ``result``, or waiting on ``pending``."""

    __slots__ = ("done", "it", "pending", "result")

    def __init__(self, it: Any) -> None:
        self.it = it
        self.result: Any = None
        self.pending: Pending = None
        try:
            self.pending = it.send(None)
        except StopIteration as stop:
            self.done = True
            self.result = stop.value
        else:
            self.done = False


def step(aw: Awaitable[Any]) -> Started:
    """Run `aw` until it first has to wait (see `Started`); exceptions propagate.

    Call it from the task that would have awaited `aw`, and `resume` it from
    there when it has to wait.
    """
    return Started(aw.__await__())


@types.coroutine
def resume(started: Started) -> Generator[Any, Any, Any]:
    """Await the rest of what `step` left waiting, as ``await aw`` would have; its result."""
    it, pending = started.it, started.pending
    while True:
        try:
            value = yield pending
        except GeneratorExit:
            it.close()
            raise
        except BaseException as exc:  # noqa: BLE001 - a cancellation (a timeout's too) reaches it
            try:
                pending = it.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                pending = it.send(value)
            except StopIteration as done:
                return done.value


def header(scope: MutableMapping[str, Any], name: bytes) -> bytes | None:
    """The first value of header `name` (lowercase, as ASGI servers give them), or None."""
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def too_large(limit: int, got: str) -> RequestError:
    return RequestError(
        f"the request body ({got}) is larger than this server accepts ({limit} bytes, max_body_bytes); "
        "send a smaller request",
        status="RESOURCE_EXHAUSTED",
        http_code=413,
    )


async def read_asgi_body(declared: bytes | None, receive: Receive, limit: int, timeout: float) -> bytes:
    """The request body (see the module docstring); `declared` is its ``Content-Length`` header."""
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise RequestError(
                f"the Content-Length header is not a number: {declared.decode('latin-1')!r}"
            ) from None
        if size > limit:
            raise too_large(limit, f"{size} bytes")
    deadline = asyncio.get_running_loop().time() + timeout
    parts: list[bytes] = []
    size = 0
    while True:
        started = step(receive())
        got = started.result
        if not started.done:  # the body is still on its way: the rest of it has a deadline
            try:
                async with asyncio.timeout_at(deadline):
                    got = await resume(started)
            except TimeoutError:
                raise RequestError(
                    f"the request body did not arrive within {timeout:g} s (body_timeout); send it at once",
                    status="DEADLINE_EXCEEDED",
                    http_code=408,
                ) from None
        kind = got["type"]
        if kind == "http.disconnect":
            raise RequestError("the client went away while sending the request", status="CANCELLED")
        if kind == "http.request":
            piece = got.get("body", b"")
            parts.append(piece)
            size += len(piece)
            if size > limit:
                raise too_large(limit, "more")
            if not got.get("more_body", False):
                return parts[0] if len(parts) == 1 else b"".join(parts)


def render_json(content: Any) -> bytes:
    """`content` as Starlette's ``JSONResponse`` renders it."""
    return _RENDER(content).encode("utf-8")


# one encoder, not one built by every `json.dumps` call with these options
_RENDER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode


def wire_json(model: BaseModel, *, ascii_only: bool = False) -> bytes:
    """A wire model's Genkit JSON (``to_wire``'s value), compact, written by pydantic in one step.

    The same JSON value as ``render_json(model.to_wire())`` (or `nb_agents.frames.frame`'s
    ASCII JSON with `ascii_only`); only a few numbers and characters are spelled otherwise
    (``1e-7`` for ``1e-07``, DEL unescaped).
    """
    return type(model).__pydantic_serializer__.to_json(  # type: ignore[no-any-return]
        model, by_alias=True, exclude_unset=True, exclude_none=True, ensure_ascii=ascii_only
    )


async def send_json(send: Send, content: Any, status: int = 200) -> None:
    """Answer with `content` as JSON (the bytes and headers of Starlette's ``JSONResponse``)."""
    await send_json_bytes(send, render_json(content), status)


async def send_json_bytes(send: Send, body: bytes, status: int = 200) -> None:
    """Answer with the JSON `body` (the headers of Starlette's ``JSONResponse``)."""
    headers = [(b"content-length", str(len(body)).encode("latin-1")), (b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
