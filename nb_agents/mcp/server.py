"""`MCPServer`: an MCP server as a toolset an agent takes in ``tools=[...]``.

Lifecycle, as `define_agent` uses it:

* **connect on first turn**: nothing starts when the server object is made;
  the first turn of an agent that has it opens the connection (a stdio server
  is started), lists its tools and builds a `MCPTool` per tool. Later turns
  reuse the listing until the server says it changed (or it reconnects).
* **a dead server**: the turn that finds it dead fails (finish reason
  ``failed``, an `MCPConnectionError` naming the server, with the last lines
  a stdio server wrote to stderr); the session keeps everything before it,
  and the next turn starts the server again.
* **closing**: ``async with server:``, ``await server.aclose()``, or closing
  the agent (``await agent.aclose()``). A closed server opens again on its
  next use.

While a turn waits on a 2025-era server's elicitation, the MCP call stays
open, held here under (session id, tool name, call ref); a 2026-07-28 server's
question holds nothing (see `nb_agents.mcp.elicitation`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from .. import _sync
from .._sync import on_portal
from ..tools import ToolFail
from .approval import needs_approval
from .calls import Call
from .connection import Connection, Transport, describe
from .errors import MCPCallLostError, MCPConnectionError, MCPError, MCPSchemaError
from .rounds import Retry
from .tools import CallKey, MCPTool

__all__ = ["MCPServer"]

DEFAULT_TIMEOUT = 30.0


def _sdk_missing() -> str | None:
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        return "nb_agents.mcp needs the MCP SDK: pip install 'nb_agents[mcp]'"
    return None


class MCPServer:
    """An MCP server whose tools join an agent. Build one with `stdio` or `http`.

    Args:
        transport: Opens the connection (what `stdio` and `http` build).
        name: The server's name: in errors, pause data, the logger
            ``nb_agents.mcp.<name>`` and (with `prefix`) tool names.
        prefix: True names tools ``<name>_<tool>``; a string is used as the
            prefix; False (the default) keeps the server's names.
        trusted: Whether this server's tool annotations are believed. False (the
            default): every tool needs a person's approval before it runs,
            with or without `ToolApproval` (MCP's spec: annotations from an
            untrusted server are untrusted). True: a ``readOnlyHint`` tool runs
            without asking, a destructive one (or one without hints) is held
            (see `nb_agents.mcp.approval`).
        approval: True holds every tool for a person, False none, None
            (the default) decides by `trusted` and the annotations.
        tool_approval: Per-tool overrides by the server's tool name (win over `approval`).
        exclude: Tools (the server's names) to leave out.
        timeout: Seconds to wait for the server to start and initialize.
        target: What the server is (a command line, a URL), for messages.

    Example:
        >>> fs = MCPServer.stdio(["npx", "@modelcontextprotocol/server-filesystem", "/data"],
        ...                      name="fs")                                   # doctest: +SKIP
        >>> agent = nba.define_agent("files", model=model, tools=[fs],
        ...                          use=[nba.middleware.ToolApproval()])     # doctest: +SKIP
    """

    def __init__(
        self,
        transport: Transport,
        *,
        name: str,
        prefix: bool | str = False,
        trusted: bool = False,
        approval: bool | None = None,
        tool_approval: Mapping[str, bool] | None = None,
        exclude: Sequence[str] = (),
        timeout: float = DEFAULT_TIMEOUT,
        target: str = "",
    ) -> None:
        missing = _sdk_missing()
        if missing is not None:
            raise ImportError(missing)
        if not name:
            raise ValueError("an MCPServer needs a name= (used in errors, logs and pause data)")
        self.name = name
        self.prefix = f"{name}_" if prefix is True else (prefix or "")
        if not isinstance(trusted, bool):
            raise TypeError(f"trusted= takes True or False, got {trusted!r}")
        self.trusted = trusted
        self.approval = approval
        self.tool_approval = dict(tool_approval or {})
        self.exclude = frozenset(exclude)
        self.timeout = timeout
        self.target = target
        self.logger = logging.getLogger(f"nb_agents.mcp.{name}")
        self._transport = transport
        self._conn: Connection | None = None
        self._connecting: asyncio.Lock | None = None
        self._tools: list[MCPTool] | None = None
        self._tools_of: Connection | None = None
        self._held: dict[CallKey, Call] = {}
        self._held_lock = threading.Lock()
        _sync.reset_after_fork(self, MCPServer._forked)

    def _forked(self) -> None:
        """In a forked child (a ``multiprocessing`` worker) the parent's session is the parent's:
        its owner task ran on the parent's private loop, its server's pipes are shared. The child
        leaves it be and connects on its own first use (a stdio server of its own); the held
        calls and the locks go too. The tools listed stay known, to be listed again there."""
        self._conn = self._tools_of = self._connecting = None
        self._held = {}
        self._held_lock = threading.Lock()

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def stdio(
        cls,
        command: Sequence[str] | str,
        *,
        name: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server run as a subprocess, spoken to over its stdin and stdout.

        Args:
            command: The command line, as a list (or a string split like a shell does).
            name: The server's name.
            env: Extra environment variables (added to the SDK's safe defaults:
                ``HOME``, ``PATH``, ...; the rest of this process's environment
                is not passed on).
            cwd: The working directory of the server process.
            **options: `MCPServer`'s keywords (``prefix``, ``approval``, ...).

        Example:
            >>> everything = MCPServer.stdio(["npx", "@modelcontextprotocol/server-everything"],
            ...                              name="everything")                 # doctest: +SKIP
        """
        argv = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
        if not argv:
            raise ValueError("MCPServer.stdio needs a command")
        extra_env = dict(env) if env is not None else None

        def transport(conn: Connection) -> contextlib.AbstractAsyncContextManager[tuple[Any, ...]]:
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            from .connection import StderrTail

            conn.stderr = StderrTail(conn.logger)
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=extra_env, cwd=cwd)
            return stdio_client(params, errlog=conn.stderr.writer)

        return cls(transport, name=name, target=shlex.join(argv), **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        name: str,
        headers: Mapping[str, str] | None = None,
        transport: Any = None,
        **options: Any,
    ) -> MCPServer:
        """A server reached over MCP's streamable HTTP transport.

        Args:
            url: The server's MCP endpoint, e.g. ``http://127.0.0.1:9000/mcp``.
            name: The server's name.
            headers: Sent with every request (``{"Authorization": "Bearer ..."}``).
            transport: An ``httpx2.AsyncBaseTransport`` to send requests with
                (tests, proxies); default: httpx2's own (the MCP SDK's HTTP client).
            **options: `MCPServer`'s keywords (``prefix``, ``approval``, ...).

        Example:
            >>> web = MCPServer.http("http://127.0.0.1:9000/mcp", name="web",
            ...                      headers={"Authorization": "Bearer s3cret"})  # doctest: +SKIP
        """
        sent = dict(headers or {})
        timeout = float(options.get("timeout", DEFAULT_TIMEOUT))

        @contextlib.asynccontextmanager
        async def open_http(conn: Connection) -> Any:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            # no read timeout: a call's response stream stays open while a person answers its question
            client = httpx2.AsyncClient(
                headers=sent,
                timeout=httpx2.Timeout(timeout, read=None),
                transport=transport,
                event_hooks={"response": [conn.saw_http_response]},
            )
            async with client, streamable_http_client(url, http_client=client) as streams:
                yield streams

        return cls(open_http, name=name, target=url, **options)

    # -- the toolset protocol -----------------------------------------------------------------
    async def list_tools(self) -> list[MCPTool]:
        """The server's tools as agent tools (connects first if needed; cached until they change)."""
        return await on_portal(self._list_tools())

    @property
    def connected(self) -> bool:
        """Whether a connection is open (a stdio server runs)."""
        return self._conn is not None and not self._conn.dead.is_set()

    def cached_tools(self) -> list[MCPTool] | None:
        """The tools of the last listing, or None if the server was never listed."""
        return self._tools

    async def connect(self) -> None:
        """Open the connection now (the first turn does it otherwise)."""
        await on_portal(self._connection())

    async def aclose(self) -> None:
        """Close the connection (a stdio server is stopped); calls waiting on answers are dropped."""
        await on_portal(self._close())

    async def __aenter__(self) -> MCPServer:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    list_tools_sync = _sync.twin(list_tools)
    connect_sync = _sync.twin(connect)
    aclose_sync = _sync.twin(aclose)

    # -- on the private loop ---------------------------------------------------------------------
    async def _connection(self) -> Connection:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            conn = self._conn
            if conn is not None and not conn.dead.is_set():
                return conn
            if conn is not None:
                self.logger.info("reconnecting to MCP server '%s' (%s)", self.name, self.target)
            conn = Connection(self.name, self._transport, self.logger, self.timeout)
            await conn.start()
            self._conn = conn
            return conn

    async def _list_tools(self) -> list[MCPTool]:
        conn = await self._connection()
        if self._tools is not None and self._tools_of is conn and not conn.tools_stale:
            return self._tools
        try:
            listed = await conn.list_tools()
        except MCPError:
            raise
        except Exception as exc:
            if conn.dead.is_set():
                raise conn.failure(f"went away while listing its tools: {describe(exc)}") from exc
            raise MCPSchemaError(
                f"MCP server '{self.name}' sent a tool listing nb_agents cannot read: {describe(exc)}",
                server=self.name,
            ) from exc
        tools = []
        for spec in listed:
            info = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
            remote = str(info.get("name", ""))
            if remote in self.exclude:
                continue
            held = needs_approval(
                info.get("annotations"),
                remote,
                trusted=self.trusted,
                approval=self.approval,
                tool_approval=self.tool_approval,
            )
            tools.append(MCPTool(self, info, name=self.prefix + remote, needs_approval=held))
        self._tools, self._tools_of = tools, conn
        return tools

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        with self._held_lock:
            self._held.clear()
        if conn is not None:
            await conn.close()

    async def start_call(self, tool: str, arguments: dict[str, Any], retry: Retry | None = None) -> Call:
        """Start a call of `tool` (the server's name), or with `retry` the next leg of one whose
        result was "input required" (its answers, none when it only polls, and the server's
        state); on the private loop."""
        conn = await self._connection()
        responses = None
        if retry is not None and retry.responses:
            from mcp.types import ElicitResult

            responses = {k: ElicitResult.model_validate(v) for k, v in retry.responses.items()}
        state = retry.request_state if retry is not None else None
        call = conn.new_call(tool, arguments, input_responses=responses, request_state=state)
        await call.start()
        return call

    async def reply(self, call: Call, answer: dict[str, Any]) -> None:
        """Send an elicitation answer to the call that asked; on the private loop."""
        if call.lost is not None:
            raise MCPCallLostError(
                f"MCP server '{self.name}': the call to '{call.tool}' that asked this question was lost "
                f"({describe(call.lost)}); the answer was not sent. Run the call again.",
                server=self.name,
            )
        from mcp.types import ElicitResult

        await call.reply(ElicitResult.model_validate(answer))

    async def drop(self, call: Call) -> None:
        """Stop a call nobody will follow any more; on the private loop."""
        call.abandon(MCPCallLostError(f"the call to '{call.tool}' was dropped", server=self.name))

    def drop_soon(self, call: Call) -> None:
        """`drop` from any thread, without waiting."""
        _sync.soon(lambda: _sync.keep(self.drop(call)))

    def call_error(self, tool: str, error: BaseException) -> Exception:
        """What a failed call raises: the connection's error, or a `ToolFail` the model sees."""
        if isinstance(error, MCPError):
            return error
        conn = self._conn
        closed = type(error).__name__ in ("ClosedResourceError", "EndOfStream", "BrokenResourceError")
        code = getattr(getattr(error, "error", None), "code", None)
        if closed or code == -32000 or (conn is not None and conn.dead.is_set()):  # -32000: closed
            if conn is not None:  # reconnect on next use
                _sync.soon(conn.mark_dead)
            return MCPConnectionError(
                f"MCP server '{self.name}' went away during a call to '{tool}': {describe(error)}",
                server=self.name,
            )
        if isinstance(error, asyncio.CancelledError):
            return MCPConnectionError(f"the call to '{tool}' on '{self.name}' was stopped", server=self.name)
        return ToolFail(f"MCP server '{self.name}' could not run '{tool}': {describe(error)}")

    # -- calls waiting for an answer -------------------------------------------------------------
    def hold(self, key: CallKey, call: Call) -> None:
        with self._held_lock:
            self._held[key] = call

    def holds(self, key: CallKey) -> bool:
        with self._held_lock:
            return key in self._held

    def take(self, key: CallKey) -> Call | None:
        with self._held_lock:
            return self._held.pop(key, None)

    def __repr__(self) -> str:
        state = "connected" if self.connected else "not connected"
        return f"MCPServer(name={self.name!r}, target={self.target!r}, {state})"
