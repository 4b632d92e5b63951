"""`remote_agent`: an agent served over HTTP, driven with the same API as a local one.

The client speaks Genkit's agent protocol, as Genkit's JS ``remoteAgent`` does, so it
drives an nb_agents server (`nb_agents.server.create_app`), Genkit's express
handler, Go's ``AgentRoutes`` or Python's ``serve_agent`` alike:

* every turn is one streamed POST of ``{"data": AgentInput, "init": AgentInit}``;
  `nb_agents.Chat` picks the init as the JS client does (the snapshot id if it has
  one, else the last state blob *verbatim*, unknown fields such as ``signature``
  included, else what the chat was created with);
* frames ``data: {"message"}`` are applied live, the turn ends on ``data:
  {"result"}``; an error frame (``data: {"error"}``, express's ``error:`` form,
  FastAPI's nested one) or a non-200 answer raises the `NbAgentsError` of its
  status; a stream that ends with neither raises instead of waiting forever;
* ``getSnapshot`` and ``abort`` are plain JSON POSTs to ``{url}/getSnapshot`` and
  ``{url}/abort`` (or the URLs given);
* what comes back is read into the local form: the ``STATUS: `` prefix Genkit
  writes on a failed turn's error message (`nb_agents.errors`) is taken off an
  output's and a snapshot's error, so a remote output equals a local one and no
  message shows its status twice.

Aborting a turn (``turn.abort()``, ``chat.abort()``) closes its connection, which
aborts the turn on the server; the response resolves with finish reason
``aborted``, as a local one does.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from datetime import timedelta
from typing import Any

import httpx

from .errors import (
    InvalidArgumentError,
    NbAgentsError,
    NotFoundError,
    UnavailableError,
    error_for_status,
    split_status_prefix,
    status_for_http,
    strip_status_prefix,
)
from .frames import agent_frames
from .inbox import turn_from_wire
from .listings import PendingTurns
from .protocol import BaseAgent
from .rules import SessionRule, SessionRules
from .types import (
    AgentErrorInfo,
    AgentInit,
    AgentInput,
    AgentOutput,
    AgentStreamChunk,
    CallOptions,
    ChunkSink,
    SessionSnapshot,
)

__all__ = ["HeadersOption", "RemoteAgent", "local_error", "remote_agent"]

HeadersOption = Mapping[str, str] | Callable[[], Mapping[str, str] | Awaitable[Mapping[str, str]]] | None
"""Headers for every request: a mapping, or a (sync or async) function called per request."""

DEFAULT_TIMEOUT = httpx.Timeout(30.0, read=None)  # a turn may think for minutes between chunks


class RemoteAgent(BaseAgent):
    """An agent served at a URL (by nb_agents or by Genkit), with the API of a local `Agent`.

    ``nba.remote_agent(url, ...)`` builds one. It satisfies what `Chat` needs of an
    agent, so ``remote.chat()`` gives the usual `Chat` (``send``, ``resume``,
    streaming, ``detach``, ``abort`` and their ``_sync`` twins).

    Args:
        url: The agent's turn endpoint, e.g. ``http://127.0.0.1:8000/bankingAgent``.
        headers: Headers for every request: a mapping, or a function (sync or
            async) called per request, e.g. to refresh a bearer token.
        client: An `httpx.AsyncClient` to send with (its own settings apply; use
            it from one event loop). By default each call opens its own.
        get_snapshot_url: Defaults to ``{url}/getSnapshot``.
        abort_url: Defaults to ``{url}/abort``.
        name: The agent's name; defaults to the last segment of the URL path.
        timeout: For the default clients: connect and write timeouts; reads
            wait as long as the turn takes.

    Example:
        >>> import nb_agents as nba
        >>> remote = nba.remote_agent("http://127.0.0.1:8000/bankingAgent")
        >>> remote.name, remote.abort_url
        ('bankingAgent', 'http://127.0.0.1:8000/bankingAgent/abort')

    Attributes:
        name: The agent's name (the last path segment of `url` unless given).
        url: The turn endpoint.
        get_snapshot_url: The getSnapshot companion.
        abort_url: The abort companion.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: HeadersOption = None,
        client: httpx.AsyncClient | None = None,
        get_snapshot_url: str | None = None,
        abort_url: str | None = None,
        name: str | None = None,
        timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT,
    ) -> None:
        self.url = url
        self.get_snapshot_url = get_snapshot_url or f"{url.rstrip('/')}/getSnapshot"
        self.abort_url = abort_url or f"{url.rstrip('/')}/abort"
        self.name = name or httpx.URL(url).path.rstrip("/").rsplit("/", 1)[-1] or url
        self._headers = headers
        self._client = client
        self._timeout = timeout

    def __repr__(self) -> str:
        return f"RemoteAgent(name={self.name!r}, url={self.url!r})"

    # -- plumbing ---------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def _http(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._client is not None:
            yield self._client
            return
        # a client per call: a shared one would be bound to whichever event loop used it
        # first, and the _sync twins run on a loop of their own
        async with httpx.AsyncClient(timeout=self._timeout) as client:
            yield client

    async def _request_headers(self) -> dict[str, str]:
        option = self._headers
        if option is None:
            return {}
        if callable(option):
            value = option()
            resolved = await value if inspect.isawaitable(value) else value
            return dict(resolved)
        return dict(option)

    async def _call(self, url: str, data: dict[str, Any]) -> Any:
        """A plain JSON POST of ``{"data": data}``; the ``result`` it answers."""
        headers = await self._request_headers()
        try:
            async with self._http() as client:
                resp = await client.post(url, json={"data": data}, headers=headers)
        except httpx.TransportError as exc:
            raise _unreachable(url, exc) from exc
        if resp.status_code != 200:
            raise http_error(resp.status_code, resp.content, url)
        try:
            payload = resp.json()
        except ValueError:
            raise NbAgentsError(f"{url} answered with a body that is not JSON", status="INTERNAL") from None
        if isinstance(payload, dict) and "error" in payload and "result" not in payload:
            raise frame_error(payload["error"])
        return payload.get("result") if isinstance(payload, dict) else None

    # -- turns ------------------------------------------------------------------------
    async def invoke(
        self,
        input: AgentInput,
        init: AgentInit,
        *,
        options: CallOptions = CallOptions(),  # noqa: B008 - frozen, shared safely
        on_chunk: ChunkSink | None = None,
        abort_signal: asyncio.Event | None = None,
    ) -> AgentOutput:
        """Run one turn on the server: one streamed POST; a failed turn is returned in-band.

        ``options.config`` travels as the body's ``config`` field (nb_agents servers
        lay it over the agent's model config; Genkit servers ignore it).
        """
        _no_context(options.context)
        body: dict[str, Any] = {"data": input.to_wire(), "init": init.to_wire()}
        if options.config is not None:
            body["config"] = options.config
        reader = asyncio.ensure_future(self._stream_turn(body, on_chunk))
        waiter = asyncio.ensure_future((abort_signal or asyncio.Event()).wait())
        try:
            done, _ = await asyncio.wait({reader, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if reader in done:
                return reader.result()
        finally:
            waiter.cancel()
            if not reader.done():
                # closing the connection is how a client aborts a turn over HTTP
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
        state = init.state
        session_id = init.session_id or (state.session_id if state is not None else None)
        return AgentOutput(
            finish_reason="aborted", snapshot_id=init.snapshot_id, session_id=session_id, state=state
        )

    async def _stream_turn(self, body: dict[str, Any], on_chunk: ChunkSink | None) -> AgentOutput:
        headers = {"Accept": "text/event-stream", **await self._request_headers()}
        try:
            async with (
                self._http() as client,
                client.stream("POST", self.url, json=body, headers=headers) as resp,
            ):
                if resp.status_code != 200:
                    raise http_error(resp.status_code, await resp.aread(), self.url)
                if resp.headers.get("content-type", "").startswith("application/json"):
                    frames: AsyncIterator[dict[str, Any]] = _single(json.loads(await resp.aread()))
                else:
                    frames = agent_frames(resp.aiter_lines(), _bad_frame)
                async for event in frames:
                    if "message" in event:
                        if on_chunk is not None:
                            await on_chunk(AgentStreamChunk.model_validate(event["message"]))
                    elif "result" in event:
                        out = AgentOutput.model_validate(event["result"])
                        return out.model_copy(update={"error": local_error(out.error)}) if out.error else out
                    elif "error" in event:
                        raise frame_error(event["error"])
                    else:
                        raise NbAgentsError(
                            f"{self.url} sent a frame this client does not know: {json.dumps(event)[:200]}",
                            status="INTERNAL",
                        )
        except httpx.TransportError as exc:
            raise _unreachable(self.url, exc) from exc
        raise UnavailableError(
            f"the agent at {self.url} closed the stream without a result or an error frame; "
            "the outcome of the turn is unknown (read its snapshot to find out)"
        )

    # -- companions -------------------------------------------------------------------
    async def get_snapshot(
        self,
        snapshot_id: str | None = None,
        *,
        session_id: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> SessionSnapshot | None:
        """A snapshot by id, or a session's latest one; None if the server has none."""
        _no_context(context)
        if (snapshot_id is None) == (session_id is None):
            raise InvalidArgumentError("get_snapshot needs exactly one of snapshot_id and session_id")
        lookup = {"snapshotId": snapshot_id} if snapshot_id is not None else {"sessionId": session_id}
        try:
            result = await self._call(self.get_snapshot_url, lookup)
        except NotFoundError:
            return None
        if result is None:
            return None
        snap = SessionSnapshot.model_validate(result)
        return snap.model_copy(update={"error": local_error(snap.error)}) if snap.error else snap

    async def abort(self, snapshot_id: str, *, context: dict[str, Any] | None = None) -> str | None:
        """Abort a pending (detached) snapshot; its previous status, None if unknown."""
        _no_context(context)
        result = await self._call(self.abort_url, {"snapshotId": snapshot_id})
        status = result.get("status") if isinstance(result, dict) else None
        return status if isinstance(status, str) else None

    async def rules(self, session_id: str, *, context: dict[str, Any] | None = None) -> SessionRules:
        """The session's per-session approval rules (an nb_agents server's ``/rules``)."""
        _no_context(context)
        result = await self._call(f"{self.url.rstrip('/')}/rules", {"sessionId": session_id})
        found = result.get("rules") if isinstance(result, dict) else None
        return SessionRules(SessionRule.from_dict(r) for r in found or [] if isinstance(r, dict))

    async def revoke_rule(
        self, session_id: str, rule_id: str, *, context: dict[str, Any] | None = None
    ) -> SessionRule:
        """Revoke a per-session approval rule (an nb_agents server's ``/revokeRule``)."""
        _no_context(context)
        result = await self._call(
            f"{self.url.rstrip('/')}/revokeRule", {"sessionId": session_id, "ruleId": rule_id}
        )
        return SessionRule.from_dict(result)

    async def pending(
        self,
        *,
        context: dict[str, Any] | None = None,
        tool: str | Collection[str] | None = None,
        older_than: timedelta | float | None = None,
    ) -> PendingTurns:
        """The paused turns the server lets this client answer (an nb_agents server's ``/pending``).

        The same listing as `Agent.pending`, scoped by the server's request
        context (the client's own sessions; every session for an approver);
        each turn's ``chat()`` answers it over HTTP.
        """
        _no_context(context)
        data: dict[str, Any] = {}
        if tool is not None:
            data["tool"] = tool if isinstance(tool, str) else list(tool)
        if older_than is not None:
            data["olderThan"] = (
                older_than.total_seconds() if isinstance(older_than, timedelta) else older_than
            )
        result = await self._call(f"{self.url.rstrip('/')}/pending", data)
        found = result.get("pending") if isinstance(result, dict) else None
        return PendingTurns(turn_from_wire(self, t) for t in found or [])


remote_agent = RemoteAgent
"""``nba.remote_agent(url, ...)``, the name DESIGN.md gives it: builds a `RemoteAgent`."""


# -- the wire --------------------------------------------------------------------------
async def _single(payload: Any) -> AsyncIterator[dict[str, Any]]:
    if isinstance(payload, dict):
        yield payload


def _bad_frame(text: str, why: str) -> NbAgentsError:
    return NbAgentsError(f"the agent sent a frame that is {why}: {text[:200]!r}", status="INTERNAL")


def local_error(err: AgentErrorInfo | None) -> AgentErrorInfo | None:
    """A failed turn's error as an in-process one has it: without Genkit's ``STATUS: `` prefix."""
    if err is None:
        return None
    message = strip_status_prefix(err.status, err.message)
    return err if message == err.message else err.model_copy(update={"message": message})


def frame_error(err: Any) -> NbAgentsError:
    """The error an error frame (or an ``{"error": ...}`` body) stands for."""
    if isinstance(err, dict) and "status" not in err and "message" not in err and "error" in err:
        err = err["error"]  # FastAPI nests the error once more
    if isinstance(err, str):
        status, message = split_status_prefix(err)
        return error_for_status(status or "UNKNOWN", message)
    if not isinstance(err, dict):
        return error_for_status("UNKNOWN", json.dumps(err))
    status = err.get("status") if isinstance(err.get("status"), str) else None
    message = str(err.get("message") or json.dumps(err))
    prefixed, rest = split_status_prefix(message)
    if prefixed is not None and (status is None or prefixed == status):
        status, message = prefixed, rest  # Genkit JS puts "STATUS: " in front of the message
    return error_for_status(status or "UNKNOWN", message, err.get("details"))


def http_error(code: int, body: bytes, url: str) -> NbAgentsError:
    """The error a non-200 answer stands for: its ``{status, message}`` body if it has one."""
    text = body.decode("utf-8", "replace").strip()
    try:
        payload = json.loads(text) if text else None
    except ValueError:
        payload = None
    if isinstance(payload, dict) and any(k in payload for k in ("status", "message", "error")):
        err = frame_error(payload)
        if err.status == "UNKNOWN" and status_for_http(code) != "UNKNOWN":
            err = error_for_status(status_for_http(code), err.message, err.details)
        return err
    status = status_for_http(code)
    return error_for_status(status, f"{url} answered HTTP {code}" + (f": {text[:500]}" if text else ""))


def _unreachable(url: str, exc: httpx.TransportError) -> NbAgentsError:
    return UnavailableError(f"could not talk to the agent at {url}: {exc!r}")


def _no_context(context: Any) -> None:
    if context is not None:
        raise InvalidArgumentError(
            "context= cannot be sent to a remote agent: its server derives the request context "
            "from the request itself (its context_provider). Send credentials with "
            "remote_agent(url, headers=...)."
        )
