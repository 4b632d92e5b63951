"""One agent turn answered over HTTP: a stream of SSE frames, or one JSON body.

`TurnResponse` is an ASGI response that starts the invocation, feeds it the one
input of the request, and answers either

* streaming: ``data: {"message": <AgentStreamChunk>}`` frames, then *always* a
  terminal ``data: {"result": <AgentOutput>}`` or ``data: {"error": {...}}``
  frame (Genkit's JS client loops forever on a stream that ends without one); or
* plain: ``200 {"result": <AgentOutput>}``.

What the request itself carries is refused before the turn starts, with its HTTP
status in both modes (`nb_agents.server.request`). What the engine decides once
the turn has started (init misuse, a tampered or unsigned state blob, a snapshot
of another session, detach without a store) is thrown: in plain mode it is
answered with its HTTP status and ``{"status", "message"}``; a stream has sent
its 200 headers at once, as Genkit's servers do, so there it is the terminal
error frame, carrying the status. A failed turn is a 200 with finish reason
``failed`` in both modes.

The error frame always goes out in a write of its own, after the chunks before
it: Genkit JS 1.42's client leaves a promise rejected, unhandled, when the last
chunk and the error frame arrive in one read (its channel makes a new wait
after handing out the chunk, and the error rejects it with nobody waiting),
which ends a default Node process. Frames carry Genkit's wire messages
(`nb_agents.server.errors.outgoing`: the ``STATUS: `` prefix on an output's
error message).

A client that disconnects before the output aborts the turn (the invocation's
foreground abort), exactly as Genkit's express handler does on ``close``. So
does one that stops reading: chunks wait in a bounded queue (the turn waits when
it is full: back-pressure), and a write that does not complete within
``write_timeout`` seconds drops the client as a disconnect, so a stalled reader
holds at most a queue's worth of memory.
Frames carry no SSE comments or keep-alives: Genkit's JS client parses every
frame as ``data: <json>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from .._sync import Signal
from ..errors import NbAgentsError
from ..frames import frame
from ..types import AgentInit, AgentInput, AgentOutput, AgentStreamChunk, CallOptions
from .errors import error_body, error_response, outgoing

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["SSE_HEADERS", "TurnResponse"]

SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # no proxy buffering: chunks must arrive as they happen
]
ERROR_FRAME_GAP = 0.05
"""Seconds between the last chunk written and an error frame: the client reads them apart."""
CHUNK_QUEUE_SIZE = 256  # chunks a slow reader may lag behind before the turn waits for it
DEFAULT_WRITE_TIMEOUT = 30.0


class ClientStalledError(NbAgentsError):
    """A write to the client did not complete in time: it stopped reading (dropped as a disconnect)."""

    status = "DEADLINE_EXCEEDED"


class TurnResponse:
    """Run one turn of `agent` for an HTTP request and answer it (see the module doc).

    Args:
        agent: The local agent to run.
        inp: The request's ``data``.
        init: The request's ``init``.
        options: The call's options (the request's ``config``, its context).
        streaming: Answer with SSE frames (else one JSON body).
        debug: Keep tracebacks in what the client sees.
    """

    def __init__(
        self,
        agent: Agent,
        inp: AgentInput,
        init: AgentInit,
        *,
        options: CallOptions | None = None,
        streaming: bool,
        debug: bool = False,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    ) -> None:
        self.agent = agent
        self.inp = inp
        self.init = init
        self.options = options if options is not None else CallOptions()
        self.write_timeout = write_timeout
        self.streaming = streaming
        self.debug = debug

    def _result(self, out: AgentOutput) -> dict[str, Any]:
        return {"result": outgoing(out.to_wire(), debug=self.debug)}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # a Signal, not a plain Event: the invocation reacts to it by callback, while a plain
        # Event would get a waiter task that outlives the turn (one per request, never ended)
        abort = Signal()
        gone = False  # the client went away or stopped reading: nothing more is queued for it
        chunks: asyncio.Queue[AgentStreamChunk] = asyncio.Queue(CHUNK_QUEUE_SIZE)

        async def on_chunk(chunk: AgentStreamChunk) -> None:
            nonlocal gone
            if gone:
                return
            if not chunks.full():
                chunks.put_nowait(chunk)
                return
            try:  # back-pressure: the turn waits for the writer, within the write timeout
                async with asyncio.timeout(self.write_timeout):
                    await chunks.put(chunk)
            except TimeoutError:
                gone = True  # the writer is stuck on a client that does not read
                abort.set()

        inv = self.agent.start(
            self.init, options=self.options, on_chunk=on_chunk if self.streaming else None, abort_signal=abort
        )
        try:
            inv.send(self.inp)
        except NbAgentsError as exc:
            inv.close()
            if self.streaming:  # a stream answers 200 and the error frame, as Genkit's servers do
                with contextlib.suppress(OSError, ClientStalledError):
                    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
                    await self._write(send, frame({"error": error_body(exc, debug=self.debug)}), more=False)
            else:
                await error_response(exc, debug=self.debug)(scope, receive, send)
            return
        output = asyncio.ensure_future(inv.output())

        def client_gone() -> None:
            nonlocal gone
            gone = True
            # only a turn still running is aborted: a detached one goes on in the background
            if not output.done():
                abort.set()

        watcher = asyncio.ensure_future(_watch_disconnect(receive, client_gone))
        try:
            if self.streaming:
                await self._stream(output, chunks, watcher, send)
            else:
                await self._plain(output, watcher, scope, receive, send)
        except (OSError, ClientStalledError):
            # ASGI 2.4 servers raise on a write to a closed connection: the client is gone;
            # one that stopped reading is dropped the same way
            client_gone()
        finally:
            watcher.cancel()
            if not output.done():
                # the client went away or the server is stopping: the turn must not go on unseen
                abort.set()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(output), timeout=10)

    async def _plain(
        self,
        output: asyncio.Future[AgentOutput],
        watcher: asyncio.Future[None],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        await asyncio.wait(_futures(output, watcher), return_when=asyncio.FIRST_COMPLETED)
        if not output.done():
            return  # disconnected: the turn was aborted, and nobody is listening
        watcher.cancel()
        exc = output.exception()
        if exc is not None:
            await error_response(exc, debug=self.debug)(scope, receive, send)
            return
        await JSONResponse(self._result(output.result()))(scope, receive, send)

    async def _stream(
        self,
        output: asyncio.Future[AgentOutput],
        chunks: asyncio.Queue[AgentStreamChunk],
        watcher: asyncio.Future[None],
        send: Send,
    ) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        ready = b""  # frames already queued go out in one write (fewer socket writes per turn)
        last_write = 0.0  # when a chunk last went out (monotonic seconds)
        while True:
            get = asyncio.ensure_future(chunks.get())
            await asyncio.wait(_futures(get, output, watcher), return_when=asyncio.FIRST_COMPLETED)
            if get.done():
                ready = frame({"message": get.result().to_wire()}) + _drain(chunks)
                if not output.done():
                    await self._write(send, ready)
                    ready, last_write = b"", time.monotonic()
                    continue
            else:
                get.cancel()
            if watcher.done():
                return  # disconnected: nothing more can be written
            break  # the output is settled
        watcher.cancel()
        ready += _drain(chunks)
        exc = output.exception()
        if exc is None:  # what is still queued goes out with the result
            await self._write(send, ready + frame(self._result(output.result())), more=False)
            return
        if ready:
            await self._write(send, ready)
            last_write = time.monotonic()
        # the error frame in a write (and a read) of its own: see the module docstring
        gap = last_write + ERROR_FRAME_GAP - time.monotonic()
        if gap > 0:
            await asyncio.sleep(gap)
        await self._write(send, frame({"error": error_body(exc, debug=self.debug)}), more=False)

    async def _write(self, send: Send, data: bytes, *, more: bool = True) -> None:
        try:
            async with asyncio.timeout(self.write_timeout):
                await send({"type": "http.response.body", "body": data, "more_body": more})
        except TimeoutError:
            raise ClientStalledError(
                f"the client read nothing for {self.write_timeout:g} s (write_timeout)"
            ) from None


def _drain(chunks: asyncio.Queue[AgentStreamChunk]) -> bytes:
    """The frames of every chunk already queued, joined."""
    out = b""
    while not chunks.empty():
        out += frame({"message": chunks.get_nowait().to_wire()})
    return out


def _futures(*futures: asyncio.Future[Any]) -> set[asyncio.Future[Any]]:
    return set(futures)


async def _watch_disconnect(receive: Receive, on_disconnect: Callable[[], None]) -> None:
    """Return (after calling `on_disconnect`) when the client closes the connection."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            on_disconnect()
            return
