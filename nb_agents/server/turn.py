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
foreground abort), as Genkit's express handler does on ``close``: a turn still
running `DISCONNECT_WATCH_AFTER` seconds after it started gets a watcher on the
connection, which aborts it once the client is gone (a turn that ends sooner
is recorded and answered; its answer is dropped if nobody listens). So does a
client that stops reading: chunks wait in a bounded buffer (the turn waits when
it is full: back-pressure), and a write that does not complete within
``write_timeout`` seconds drops the client as a disconnect, so a stalled reader
holds at most a buffer's worth of memory.

Cost per request (issue 23): the turn runs in the request's own task
(`Agent.invoke`); no watcher task unless the turn is long (and one timer per
event loop for all the turns that may become long); chunks go out from a
callback scheduled when the first of a burst arrives (the frames of two loop
passes in one write, the terminal frame with those still buffered), and a read or
write gets a timer only when it has to wait (`nb_agents.server.asgi.step`).
Frames carry no SSE comments or keep-alives: Genkit's JS client parses every
frame as ``data: <json>``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.types import Receive, Scope, Send

from .._sync import Signal
from ..errors import NbAgentsError
from ..frames import frame
from ..types import AgentInit, AgentInput, AgentOutput, AgentStreamChunk, CallOptions
from .asgi import Started, render_json, resume, send_json_bytes, step, wire_json
from .errors import error_body, error_response, outgoing

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["SSE_HEADERS", "TurnResponse"]

log = logging.getLogger("nb_agents.server")

SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # no proxy buffering: chunks must arrive as they happen
]
ERROR_FRAME_GAP = 0.05
"""Seconds between the last chunk written and an error frame: the client reads them apart."""
CHUNK_QUEUE_SIZE = 256  # chunks a slow reader may lag behind before the turn waits for it
DEFAULT_WRITE_TIMEOUT = 30.0
DISCONNECT_WATCH_AFTER = 0.1
"""Seconds a turn runs before a watcher on its connection aborts it when the client goes away."""


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

    def _result(self, out: AgentOutput, *, ascii_only: bool) -> bytes:
        """``{"result": <the output>}`` as it goes out (`outgoing`), JSON: ASCII for a frame."""
        if out.error is None:  # nothing for `outgoing` to change: pydantic writes the JSON itself
            return b'{"result":' + wire_json(out, ascii_only=ascii_only) + b"}"
        result = {"result": outgoing(out.to_wire(), debug=self.debug)}
        return frame(result)[6:-2] if ascii_only else render_json(result)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # a Signal, not a plain Event: the invocation reacts to it by callback, while a plain
        # Event would get a waiter task that outlives the turn (one per request, never ended)
        abort = Signal()
        running = True
        frames = _Frames(send, self.write_timeout, abort) if self.streaming else None

        def client_gone() -> None:
            if frames is not None:
                frames.gone = True
            # only a turn still running is aborted: a detached one goes on in the background
            if running:
                abort.set()

        watch = _Watch(receive, client_gone)
        try:
            if frames is not None:  # a stream's 200 goes out at once, as Genkit's servers do
                await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            error: BaseException | None = None
            result = b""
            try:
                out = await self.agent.invoke(
                    self.inp,
                    self.init,
                    options=self.options,
                    on_chunk=frames.on_chunk if frames is not None else None,
                    abort_signal=abort,
                )
                result = self._result(out, ascii_only=frames is not None)
            except Exception as exc:  # noqa: BLE001 - answered below (thrown: its status; a bug: 500)
                error = exc
            running = False
            watch.stop()
            if frames is not None:
                if error is None:
                    await frames.finish(b"data: " + result + b"\n\n", error=False)
                else:
                    await frames.finish(frame({"error": error_body(error, debug=self.debug)}), error=True)
            elif error is not None:
                await error_response(error, debug=self.debug)(scope, receive, send)
            else:
                await send_json_bytes(send, result)
        except (OSError, ClientStalledError):
            # ASGI 2.4 servers raise on a write to a closed connection: the client is gone;
            # one that stopped reading is dropped the same way
            client_gone()
        finally:
            running = False
            watch.stop()
            if frames is not None:
                frames.close()


class _Watch:
    """Abort on a disconnect, watched only for a turn that runs longer than `DISCONNECT_WATCH_AFTER`.

    The watcher reads the connection's receive channel, which says ``http.disconnect``
    at once for a client already gone: none is missed, some are seen late. Turns
    wait for their watcher in their loop's `_Watches` (one timer for all of them).
    """

    __slots__ = ("on_gone", "receive", "task", "watches")

    def __init__(self, receive: Receive, on_gone: Callable[[], None]) -> None:
        self.receive = receive
        self.on_gone = on_gone
        self.task: asyncio.Task[None] | None = None
        loop = asyncio.get_running_loop()
        watches = _WATCHES.get(loop)
        if watches is None:
            watches = _WATCHES[loop] = _Watches(loop)
        self.watches = watches
        watches.add(self)

    def start(self) -> None:
        self.task = asyncio.ensure_future(_watch_disconnect(self.receive, self.on_gone))

    def stop(self) -> None:
        self.watches.waiting.pop(self, None)
        if self.task is not None:
            self.task.cancel()
            self.task = None


class _Watches:
    """The turns of one event loop waiting for a watcher, oldest first, and one timer for them all."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: dict[_Watch, float] = {}  # since when (loop time); insertion order is age order
        self.timer: asyncio.TimerHandle | None = None

    def add(self, watch: _Watch) -> None:
        self.waiting[watch] = now = self.loop.time()
        if self.timer is None:
            self.timer = self.loop.call_at(now + DISCONNECT_WATCH_AFTER, self._tick)

    def _tick(self) -> None:
        self.timer = None
        due = self.loop.time() - DISCONNECT_WATCH_AFTER
        for watch, since in list(self.waiting.items()):
            if since > due:
                self.timer = self.loop.call_at(since + DISCONNECT_WATCH_AFTER, self._tick)
                return
            del self.waiting[watch]
            watch.start()


_WATCHES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watches] = weakref.WeakKeyDictionary()


class _Frames:
    """A stream's frames: written from a callback, in the order made, each write bounded in time.

    A chunk is buffered and a write scheduled for the end of the next loop pass, so
    a burst of chunks goes out in one write (and a turn that ends in that pass sends
    them with its result: one write per request); a write that cannot complete at once
    (the socket is full) goes on in a task under ``write_timeout``, and chunks
    made meanwhile wait for it (the turn waits once `CHUNK_QUEUE_SIZE` have).
    """

    def __init__(self, send: Send, write_timeout: float, abort: Signal) -> None:
        self.send = send
        self.write_timeout = write_timeout
        self.abort = abort
        self.buffer: list[bytes] = []
        self.scheduled = False
        self.writer: asyncio.Task[None] | None = None
        self.gone = False  # the client went away or stopped reading: nothing more is written
        self.closed = False  # the terminal frame went out (or the response ended)
        self.last_write = 0.0  # when a chunk last went out (monotonic seconds)

    async def on_chunk(self, chunk: AgentStreamChunk) -> None:
        if self.gone or self.closed:
            return
        self.buffer.append(b'data: {"message":' + wire_json(chunk, ascii_only=True) + b"}\n\n")
        if self.writer is not None:
            if len(self.buffer) >= CHUNK_QUEUE_SIZE:  # back-pressure: the turn waits for the writer
                await asyncio.wait({self.writer})  # bounded: each of its writes has the write timeout
            return
        if len(self.buffer) >= CHUNK_QUEUE_SIZE:  # a long burst: written now
            self._flush()
        elif not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._flush, True)

    def _flush(self, wait: bool = False) -> None:
        if wait:  # one loop pass more: what the turn makes next (often its end) joins this write
            asyncio.get_running_loop().call_soon(self._flush)
            return
        self.scheduled = False
        if self.gone or self.closed or self.writer is not None or not self.buffer:
            return
        data = b"".join(self.buffer)
        self.buffer.clear()
        try:
            started = step(self.send({"type": "http.response.body", "body": data, "more_body": True}))
        except Exception as exc:  # noqa: BLE001 - a failed write drops the client
            self._lost(exc)
            return
        if started.done:
            self.last_write = time.monotonic()
        else:  # the socket is full: the write goes on in a task, within the write timeout
            self.writer = asyncio.ensure_future(self._finish_write(started))

    async def _finish_write(self, started: Started) -> None:
        try:
            async with asyncio.timeout(self.write_timeout) as deadline:
                await resume(started)
                self.last_write = time.monotonic()
                while self.buffer and not (self.gone or self.closed):
                    deadline.reschedule(asyncio.get_running_loop().time() + self.write_timeout)
                    data = b"".join(self.buffer)
                    self.buffer.clear()
                    await self.send({"type": "http.response.body", "body": data, "more_body": True})
                    self.last_write = time.monotonic()
        except Exception as exc:  # noqa: BLE001 - a stalled or failed write drops the client
            self._lost(exc)
        finally:
            self.writer = None

    def _lost(self, exc: BaseException) -> None:
        if not isinstance(exc, OSError | TimeoutError):
            log.error("writing a stream to its client failed", exc_info=exc)
        self.gone = True
        self.abort.set()  # a no-op once the turn has ended

    async def finish(self, last: bytes, *, error: bool) -> None:
        """Write what is buffered and the terminal frame `last` (an error frame in a write of its own)."""
        if self.writer is not None:
            await asyncio.wait({self.writer})
        if self.gone or self.closed:
            return
        ready = b"".join(self.buffer)
        self.buffer.clear()
        if not error:  # what is still buffered goes out with the result
            await self._write(ready + last, more=False)
            return
        if ready:
            await self._write(ready, more=True)
            self.last_write = time.monotonic()
        # the error frame in a write (and a read) of its own: see the module docstring
        gap = self.last_write + ERROR_FRAME_GAP - time.monotonic()
        if gap > 0:
            await asyncio.sleep(gap)
        await self._write(last, more=False)

    async def _write(self, data: bytes, *, more: bool) -> None:
        if not more:
            self.closed = True
        started = step(self.send({"type": "http.response.body", "body": data, "more_body": more}))
        if started.done:
            return
        try:
            async with asyncio.timeout(self.write_timeout):
                await resume(started)
        except TimeoutError:
            raise ClientStalledError(
                f"the client read nothing for {self.write_timeout:g} s (write_timeout)"
            ) from None

    def close(self) -> None:
        self.closed = True
        if self.writer is not None:
            self.writer.cancel()


async def _watch_disconnect(receive: Receive, on_disconnect: Callable[[], None]) -> None:
    """Return (after calling `on_disconnect`) when the client closes the connection."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            on_disconnect()
            return
