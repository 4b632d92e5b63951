"""One live MCP session, owned by a task on nb_agents' private event loop.

The MCP SDK's transports and `ClientSession` are anyio context managers that
must be entered and left by the same task. `Connection` runs that task (the
*owner*) on nb_agents' private loop (`nb_agents._sync.portal_loop`), which is
always running: a notebook may use the same server from ``await chat.send``
(the kernel's loop), ``chat.send_sync`` (the private loop) and a form's click
(the kernel's loop again), and a session bound to the kernel's loop would
deadlock while a sync call blocks that loop. Everything that touches the
session runs here; `MCPServer` hands work over with `on_portal`.

The owner relays the transport's messages to the session, so it sees the
moment a server goes away (a stdio server's output closes, an HTTP transport
fails): the connection is marked dead, every call in flight fails with a
`MCPConnectionError` naming the server, and the next use reconnects.

The session is the SDK's `mcp.Client` (``mode="auto"``): it asks the server
for ``server/discover`` and speaks the 2026-07-28 revision when the server
does, or falls back to the ``initialize`` handshake of a 2025-era server
(`Connection.modern` says which). Only a 2025-era server may ask a question
in the middle of a call (`_on_elicit`); a 2026-era server returns its question
as the call's result instead (see `nb_agents.mcp.rounds`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .calls import Call, Dispatch
from .errors import MCPConnectionError

__all__ = ["Connection", "Transport", "describe"]

T = TypeVar("T")

Transport = Callable[["Connection"], contextlib.AbstractAsyncContextManager[tuple[Any, ...]]]
"""Opens the transport: an async context manager yielding ``(read, write, ...)`` streams."""

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def describe(exc: BaseException) -> str:
    """An exception (or the first leaf of an exception group) as ``Type: message``."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class StderrTail:
    """A pipe a stdio server writes its stderr to: lines go to the server's logger at
    DEBUG, and the last ones are kept for the error message when it dies."""

    def __init__(self, logger: logging.Logger, keep: int = 20) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=keep)
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "r", errors="replace")
        self._logger = logger
        self.closed = threading.Event()  # set once the server's stderr ended (it exited)
        threading.Thread(target=self._pump, name=f"{logger.name}-stderr", daemon=True).start()

    def _pump(self) -> None:
        try:
            with self._reader:
                for line in self._reader:
                    line = line.rstrip()
                    if line:
                        self.lines.append(line)
                        self._logger.debug("stderr: %s", line)
        finally:
            self.closed.set()

    def close_writer(self) -> None:
        """Our copy of the write end (the child keeps its own; EOF comes when it exits)."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def tail(self) -> str:
        return "\n".join(self.lines)


class Connection:
    """A session with one MCP server. Create, `start` and use it on the private loop only.

    Args:
        server: The server's name (for errors and the logger).
        transport: Opens the transport (see `Transport`).
        logger: Where the server's log messages go.
        timeout: Seconds to wait for the server to start and initialize.
    """

    def __init__(self, server: str, transport: Transport, logger: logging.Logger, timeout: float) -> None:
        self.server = server
        self._transport = transport
        self.logger = logger
        self.timeout = timeout
        self.session: Any = None
        self.dispatch = Dispatch()
        self.calls: set[Call] = set()
        self.dead = asyncio.Event()
        self.error: BaseException | None = None
        self.stderr: StderrTail | None = None
        self.tools_stale = False
        self.http_error: str | None = None  # the last HTTP error status the server answered with
        self._stop = asyncio.Event()
        self._closing = False
        self._owner: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the transport and initialize; raises `MCPConnectionError` when it cannot."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._owner = asyncio.ensure_future(self._own(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.timeout)
        except TimeoutError:
            await self.close()
            raise self.failure(f"did not start within {self.timeout:g} s") from None
        except MCPConnectionError:
            raise
        except BaseException as exc:
            raise self.failure(f"could not be started: {describe(exc)}") from exc

    async def _own(self, ready: asyncio.Future[None]) -> None:
        import anyio
        from mcp import Client
        from mcp.types import Implementation

        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport(self))
                if hasattr(
                    streams[0], "aclose"
                ):  # the reading end is ours to close (the SDK closes its writer)
                    stack.push_async_callback(streams[0].aclose)
                if self.stderr is not None:
                    self.stderr.close_writer()
                tg = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(tg.cancel_scope.cancel)
                to_session, from_relay = anyio.create_memory_object_stream[Any](0)
                stack.push_async_callback(from_relay.aclose)  # the session does not close it
                tg.start_soon(self._relay, streams[0], to_session)
                client = Client(
                    contextlib.nullcontext((from_relay, streams[1])),  # type: ignore[arg-type]  # a Transport
                    mode="auto",
                    elicitation_callback=self._on_elicit,
                    logging_callback=self._on_log,
                    log_level="debug",  # 2026-era servers send logs only to requests that ask for them
                    message_handler=self._on_message,
                    client_info=Implementation(name="nb_agents", version=_version()),
                    cache=None,  # `MCPServer` keeps the listing until the server says it changed
                )
                await stack.enter_async_context(client)
                self.session = client.session
                self.http_error = None  # a legacy server may have refused the probe for server/discover
                tools = getattr(self.session.server_capabilities, "tools", None)
                if self.modern and getattr(tools, "list_changed", None):
                    tg.start_soon(self._watch_tools, client)
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - the connection's end, whatever it was
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(describe(exc)))
            elif not self._stop.is_set():
                self.error = exc
        finally:
            if self.stderr is not None:
                self.stderr.close_writer()  # also when the process never started
            self._died(self.error)

    async def _relay(self, source: Any, sink: Any) -> None:
        """Pass messages on to the session; when the transport's stream ends, the server is gone."""
        async with sink:
            async for message in source:
                await sink.send(message)
            if not self._stop.is_set():  # before the session hears of it: calls fail with our reason
                if self.stderr is not None:  # its last words may still be on their way: wait a little
                    import anyio

                    await anyio.to_thread.run_sync(self.stderr.closed.wait, 2.0)
                self._died(None)

    def _died(self, error: BaseException | None) -> None:
        if self.dead.is_set():
            return
        self.dead.set()
        self._stop.set()
        if error is None and self.session is not None and not self._closing:
            reason = self.failure("closed the connection (the server exited?)")
        else:
            reason = self.failure(f"failed: {describe(error)}" if error else "was closed")
        for call in list(self.calls):
            call.abandon(reason)
        self.calls.clear()

    def mark_dead(self) -> None:
        """Take the connection for gone (a call found it closed); the next use reconnects."""
        self._died(None)
        if self._owner is not None and not self._owner.done():
            self._stop.set()

    async def close(self) -> None:
        """Close the session and the transport (a stdio server is stopped)."""
        self._closing = True
        self._stop.set()
        if self._owner is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._owner), 10.0)
        self._died(None)

    def failure(self, what: str) -> MCPConnectionError:
        """The error for this server, with the last lines it wrote to stderr (or its HTTP status)."""
        tail = self.stderr.tail() if self.stderr is not None else ""
        said = f"\nits last words on stderr:\n{tail}" if tail else ""
        if self.http_error and self.http_error not in what:
            # the SDK reports a refused request as a JSON-RPC error without the status: say it
            what = f"{what} (it answered {self.http_error})"
        return MCPConnectionError(f"MCP server '{self.server}' {what}{said}", server=self.server)

    async def saw_http_response(self, response: Any) -> None:
        """An HTTP transport's response hook: keep the status of a refusal (401, 403, 5xx)."""
        if response.status_code >= 400:
            self.http_error = f"HTTP {response.status_code} {response.reason_phrase}".strip()

    # -- what the server sends -------------------------------------------------------------
    async def _on_elicit(self, context: Any, params: Any) -> Any:
        from mcp import types

        call = self.dispatch.active
        if call is None:  # nothing of ours is running: no one to ask
            return types.ErrorData(code=types.INVALID_REQUEST, message="no tool call is waiting for input")
        answer = await call.ask(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return types.ElicitResult.model_validate(answer)

    async def _on_log(self, params: Any) -> None:
        data = params.data
        text = data if isinstance(data, str) else _json(data)
        where = f"{params.logger}: " if getattr(params, "logger", None) else ""
        self.logger.log(_LEVELS.get(str(params.level), logging.INFO), "%s%s", where, text)

    async def _watch_tools(self, client: Any) -> None:
        """A 2026-07-28 server says its tools changed only on a stream the client opens."""
        try:
            async with client.listen(tools_list_changed=True) as changes:
                async for _ in changes:
                    self.tools_stale = True
        except Exception as exc:  # noqa: BLE001 - no stream of changes: the listing stays as it is
            if not self._stop.is_set():
                self.logger.debug("no stream of tool changes: %s", describe(exc))

    async def _on_message(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.tools_stale = True
        elif isinstance(message, Exception):
            self.logger.warning("transport error: %s", describe(message))

    # -- requests ----------------------------------------------------------------------------
    async def list_tools(self) -> list[Any]:
        """Every tool the server lists (all pages)."""
        from mcp.types import PaginatedRequestParams

        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(1000):  # a bound: a server that pages forever is a broken server
            page = await self.session.list_tools(
                params=PaginatedRequestParams(cursor=cursor) if cursor else None
            )
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools_stale = False
        return tools

    @property
    def modern(self) -> bool:
        """Whether the session speaks the 2026-07-28 revision (questions come back as results)."""
        version = getattr(self.session, "protocol_version", None) or ""
        return version >= "2026-07-28"

    def new_call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        input_responses: dict[str, Any] | None = None,
        request_state: str | None = None,
    ) -> Call:
        """A call of tool `name` (not started: ``await call.start()``).

        With `input_responses` (and the `request_state` the server returned), the
        call is the retry of one whose result was "input required" (2026-07-28).
        """

        async def run(call: Call) -> Any:
            try:
                return await self.session.call_tool(
                    name,
                    arguments,
                    progress_callback=call.on_progress,
                    input_responses=input_responses,
                    request_state=request_state,
                    allow_input_required=True,
                )
            finally:
                self.calls.discard(call)

        call = Call(self.dispatch, run, name)
        self.calls.add(call)
        return call


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nb_agents")
    except PackageNotFoundError:
        return "0"
