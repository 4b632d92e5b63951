"""S5's two ways to POST to a served agent: ``httpx.AsyncClient``, and hand-written HTTP/1.1.

Both hold one keep-alive connection and answer ``(status, body text)``. A
request may be given its own ``timeout``: when it expires the transport closes
the connection, as a client that gives up does, and raises `ClientTimeoutError`
(the server sees a disconnect). Every other failure is a `CycleError`.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import httpx

SSE = {"Accept": "text/event-stream"}
REQUEST_TIMEOUT_S = 30.0


class CycleError(Exception):
    """A request of a cycle answered something other than what the cycle expects."""


class ClientTimeoutError(CycleError):
    """The client gave up on a request (its own ``timeout``) and closed the connection."""


def frames(body: str) -> list[dict[str, Any]]:
    """The JSON payloads of an SSE body's ``data: <json>`` frames."""
    out = []
    for piece in body.strip().split("\n\n"):
        if not piece.startswith("data: "):
            raise CycleError(f"an SSE frame is not 'data: <json>': {piece[:120]!r}")
        out.append(json.loads(piece[len("data: ") :]))
    return out


class Transport(Protocol):
    async def post(
        self, body: bytes, sse: bool, *, suffix: str = "", timeout: float | None = None
    ) -> tuple[int, str]: ...

    async def aclose(self) -> None: ...


async def _bounded(
    coro: Awaitable[tuple[int, str]], timeout: float | None, on_timeout: Callable[[], Awaitable[None]]
) -> tuple[int, str]:
    """Run a request within the client's own timeout (a `ClientTimeoutError`) or the safety bound."""
    mine = timeout is not None and timeout < REQUEST_TIMEOUT_S
    try:
        async with asyncio.timeout(timeout if mine else REQUEST_TIMEOUT_S):
            return await coro
    except TimeoutError:
        await on_timeout()
        if mine:
            raise ClientTimeoutError(f"gave up after {timeout:.3f} s") from None
        raise CycleError(f"no answer within {REQUEST_TIMEOUT_S} s") from None


class HttpxTransport:
    """POSTs through ``httpx.AsyncClient`` (one keep-alive connection): what a Python client uses."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.AsyncClient(
            timeout=REQUEST_TIMEOUT_S, limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)
        )

    async def post(
        self, body: bytes, sse: bool, *, suffix: str = "", timeout: float | None = None
    ) -> tuple[int, str]:
        headers = {"Content-Type": "application/json", **(SSE if sse else {})}
        try:
            # cancelled by the timeout, httpx closes the connection it was using
            return await _bounded(self._post(self.url + suffix, body, headers), timeout, _nothing)
        except httpx.HTTPError as exc:
            raise CycleError(f"{type(exc).__name__}: {exc}") from None

    async def _post(self, url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        res = await self.http.post(url, content=body, headers=headers)
        return res.status_code, res.text

    async def aclose(self) -> None:
        await self.http.aclose()


async def _nothing() -> None:
    return None


class RawTransport:
    """POSTs as hand-written HTTP/1.1 over one asyncio connection: a load generator costing little CPU.

    Reads ``Content-Length`` and chunked bodies (uvicorn sends an SSE stream chunked).
    """

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.path, self.netloc = parts.path, parts.netloc
        self.conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(
        self, body: bytes, sse: bool, *, suffix: str = "", timeout: float | None = None
    ) -> tuple[int, str]:
        try:
            return await _bounded(self._post(self.path + suffix, body, sse), timeout, self.aclose)
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            await self.aclose()
            raise CycleError(f"{type(exc).__name__}: {exc}") from None

    async def _post(self, path: str, body: bytes, sse: bool) -> tuple[int, str]:
        if self.conn is not None and (self.conn[0].at_eof() or self.conn[1].is_closing()):
            # the server closed it while it sat idle (its keep-alive timeout): a request written
            # on it would be lost unanswered, so a new connection takes it, as httpx does
            await self.aclose()
        if self.conn is None:
            self.conn = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.conn
        accept = "Accept: text/event-stream\r\n" if sse else ""
        head = f"POST {path} HTTP/1.1\r\nHost: {self.netloc}\r\nContent-Type: application/json\r\n{accept}"
        writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        status_line, *header_lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {}
        for line in header_lines:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            data = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            pieces = []
            while size := int((await reader.readuntil(b"\r\n"))[:-2], 16):
                pieces.append((await reader.readexactly(size + 2))[:-2])
            await reader.readexactly(2)
            data = b"".join(pieces)
        else:
            raise ValueError(f"a response with neither Content-Length nor chunks: {headers}")
        if headers.get("connection", "").lower() == "close":
            await self.aclose()
        return int(status_line.split()[1]), data.decode()

    async def aclose(self) -> None:
        if self.conn is not None:
            self.conn[1].close()
            self.conn = None


def transport(kind: str, url: str) -> HttpxTransport | RawTransport:
    """A transport of `kind` (``httpx`` or ``raw``) to the agent at `url`."""
    return HttpxTransport(url) if kind == "httpx" else RawTransport(url)
