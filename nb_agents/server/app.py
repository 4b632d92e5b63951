"""`create_app`: agents served over HTTP with Genkit's agent protocol.

Per agent, relative to ``prefix``:

* ``POST /{name}``: one turn. Body ``{"data": AgentInput, "init": AgentInit}``,
  optionally ``"config"``: model settings for this call (an nb_agents extension;
  only the keys in ``call_config_keys`` are accepted);
  streamed as SSE when the ``Accept`` header includes ``text/event-stream`` or
  the query has ``stream=true`` (see `nb_agents.server.turn`), else
  ``200 {"result": AgentOutput}``. Genkit FastAPI's ``?session_id=`` shortcut
  and snake_case keys are accepted.
* ``POST /{name}/getSnapshot``: ``{"data": {"snapshotId"} | {"sessionId"}}`` ->
  ``{"result": SessionSnapshot}``; 404 ``NOT_FOUND`` for an unknown one.
* ``POST /{name}/abort``: ``{"data": {"snapshotId"}}`` ->
  ``{"result": {"snapshotId", "status"?}}``, the status the snapshot had before
  (omitted when the snapshot is unknown).
* ``POST /{name}/rules``: ``{"data": {"sessionId"}}`` -> ``{"result": {"rules": [...]}}``,
  the session's per-session approval rules (an nb_agents extension).
* ``POST /{name}/revokeRule``: ``{"data": {"sessionId", "ruleId"}}`` ->
  ``{"result": rule}``, the revoked rule; 404 ``NOT_FOUND`` for an unknown one.
* ``POST /{name}/pending``: ``{"data": {"tool"?: name | [names], "olderThan"?: seconds}}``
  -> ``{"result": {"pending": [turn, ...]}}``, the paused turns the caller may
  answer (its own; every one of the agent for an approver), oldest first, each
  ``{sessionId, snapshotId, status, message, requestedBy?, pausedAt?, tools?}``
  (`nb_agents.inbox.turn_to_wire`; an nb_agents extension).
* ``GET|POST /{name}/answer?token=...``: the page a signed answer link opens
  (`nb_agents.server.answer_page`), for an agent whose ``on_pause`` sends them.
* ``GET /``: the agents served, each with Genkit's ``metadata.agent``.

The companions exist only for agents with a store, as in Genkit. Every
request is bounded before it reaches an agent (`nb_agents.server.request`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware as StarletteMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from ..agent import Agent
from ..errors import NbAgentsError, NotFoundError, RequestError
from ..inbox import turn_to_wire
from ..types import AgentInit, AgentInput, CallOptions
from .answer_page import answer_routes
from .auth import ContextProvider, resolve_context
from .errors import error_response, outgoing
from .lean import LeanApp, RouteOptions, TurnRoute, cors, wants_stream
from .request import (
    call_config,
    check_fields,
    check_turn_fields,
    check_turn_values,
    count_parts,
    parse_envelope,
    read_body,
    validate,
)
from .turn import DEFAULT_WRITE_TIMEOUT, TurnResponse

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_CALL_CONFIG_KEYS",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_PARTS",
    "DEFAULT_WRITE_TIMEOUT",
    "AppOptions",
    "create_app",
]

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_MAX_PARTS = 4096
DEFAULT_BODY_TIMEOUT = 30.0
DEFAULT_CALL_CONFIG_KEYS = frozenset(
    {
        "temperature",
        "topP",
        "top_p",
        "topK",
        "top_k",
        "maxOutputTokens",
        "max_output_tokens",
        "maxTokens",
        "max_tokens",
        "stopSequences",
        "stop_sequences",
        "stop",
    }
)
"""The model settings a client may set per call by default: Genkit's common generation keys."""
_COMPANION_KEYS = ("data", "init")
_SNAPSHOT_ID = ("snapshotId", "snapshot_id")
_SESSION_ID = ("sessionId", "session_id")
_RULE_ID = ("ruleId", "rule_id")
_PRIVATE_SNAPSHOT_FIELDS = ("agent", "owner", "toolRuns", "answer", "rules", "forkOf", "timing")

Endpoint = Callable[[Request], Awaitable[ASGIApp]]


class AppOptions(TypedDict, total=False):
    """`create_app`'s keyword arguments, for a caller that passes them on (`cli.build_app`)."""

    prefix: str
    max_body_bytes: int
    max_parts: int
    call_config_keys: Collection[str] | None
    body_timeout: float
    write_timeout: float
    context_provider: ContextProvider | None
    cors_origins: Sequence[str]
    debug: bool


def create_app(
    agents: Agent | Iterable[Agent],
    *,
    prefix: str = "",
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_parts: int = DEFAULT_MAX_PARTS,
    call_config_keys: Collection[str] | None = DEFAULT_CALL_CONFIG_KEYS,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    context_provider: ContextProvider | None = None,
    cors_origins: Sequence[str] = (),
    debug: bool = False,
) -> Starlette:
    """An ASGI app serving `agents` with Genkit's agent HTTP protocol.

    Args:
        agents: One agent or several (names must be unique).
        prefix: A path prefix for every route, e.g. ``"/api"``.
        max_body_bytes: The largest request body accepted (413 beyond it).
        max_parts: The most parts one request may carry: its message, its
            resume answers and its client-managed state blob together (400
            beyond it).
        call_config_keys: The model settings a request's ``config`` may set
            for its turn (laid over the agent's config): by default the common
            generation keys (temperature, topP, topK, maxOutputTokens,
            stopSequences); None accepts any key, an empty collection none.
            A provider passes keys it does not know through to its API, so
            widen this only for clients you trust.
        body_timeout: Seconds a request body may take to arrive (408 beyond).
        write_timeout: Seconds a write to a streaming client may wait; one that
            stops reading for longer is dropped as if it had disconnected.
        context_provider: Who is calling: a function of the request returning
            the request context (``{"auth": {"uid": ...}}``), sync or async, or
            raising `UnauthenticatedError` (401) / `PermissionDeniedError`
            (403); e.g. `nb_agents.server.api_key`. A session belongs to the
            principal that created it: other principals get NOT_FOUND.
        cors_origins: Origins whose pages may call the agents (CORS, with
            preflights), e.g. ``["https://app.example"]``; none by default.
        debug: Send tracebacks of failed turns and server errors to clients.
            Leave it off for anything reachable by others.

    Example:
        >>> import nb_agents as nba
        >>> from nb_agents.server import create_app
        >>> from nb_agents.testing import FunctionModel
        >>> agent = nba.define_agent("echo", model=FunctionModel(lambda req: "hi"))
        >>> app = create_app(agent)       # then: uvicorn.run(app, host="127.0.0.1")
        >>> [route.path for route in app.routes]
        ['/', '/echo']
    """
    served = [agents] if isinstance(agents, Agent) else list(agents)
    for agent in served:
        if not isinstance(agent, Agent):
            raise TypeError(f"create_app serves nb_agents.Agent objects, got {type(agent).__name__}")
    names = [a.name for a in served]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"two agents share the name {duplicates[0]!r}; each needs its own route")
    if max_body_bytes <= 0 or max_parts <= 0:
        raise ValueError("max_body_bytes and max_parts must be positive")
    if body_timeout <= 0 or write_timeout <= 0:
        raise ValueError("body_timeout and write_timeout must be positive")
    base = "/" + prefix.strip("/") if prefix.strip("/") else ""
    served_names = ", ".join(names) or "(none)"

    def guarded(fn: Endpoint) -> Endpoint:
        async def endpoint(request: Request) -> ASGIApp:
            try:
                kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
                if kind != "application/json":
                    # a page on any site can POST text/plain without a preflight: refuse it unread
                    raise RequestError(
                        f"this endpoint takes a JSON body; send Content-Type: application/json "
                        f"(got {kind or 'none'})",
                        http_code=415,
                    )
                request.state.nba_context = await resolve_context(context_provider, request)
                return await fn(request)
            except NbAgentsError as exc:
                return error_response(exc, debug=debug)

        return endpoint

    async def listing(request: Request) -> ASGIApp:
        return JSONResponse({"agents": [_describe(a, base) for a in served]})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            message = (
                f"no route {request.method} {request.url.path}; this server serves agents: {served_names}"
            )
            return JSONResponse({"status": "NOT_FOUND", "message": message}, status_code=404)
        if exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}; use POST"
            headers = dict(exc.headers or {})
            body = {"status": "UNIMPLEMENTED", "message": message}
            return JSONResponse(body, status_code=405, headers=headers)
        return JSONResponse({"status": "UNKNOWN", "message": exc.detail}, status_code=exc.status_code)

    async def server_error(request: Request, exc: Exception) -> Response:
        return error_response(exc, debug=debug)

    options = RouteOptions(
        max_body_bytes=max_body_bytes,
        max_parts=max_parts,
        body_timeout=body_timeout,
        write_timeout=write_timeout,
        config_keys=frozenset(call_config_keys) if call_config_keys is not None else None,
        context_provider=context_provider,
        debug=debug,
    )
    routes: list[BaseRoute] = [Route(base + "/", listing, methods=["GET"])]
    lean: dict[str, ASGIApp] = {}
    for agent in served:
        path = f"{base}/{agent.name}"
        verbs = _AgentRoutes(agent, options)
        routes.append(Route(path, guarded(verbs.turn), methods=["POST"]))
        lean[path] = TurnRoute(verbs.turn_response, options)
        if agent.store is not None:
            routes.append(Route(path + "/getSnapshot", guarded(verbs.get_snapshot), methods=["POST"]))
            routes.append(Route(path + "/abort", guarded(verbs.abort), methods=["POST"]))
            routes.append(Route(path + "/rules", guarded(verbs.rules), methods=["POST"]))
            routes.append(Route(path + "/revokeRule", guarded(verbs.revoke_rule), methods=["POST"]))
            routes.append(Route(path + "/pending", guarded(verbs.pending), methods=["POST"]))
            routes += answer_routes(agent, path, max_body_bytes=max_body_bytes)
    middleware = [StarletteMiddleware(cors, origins=cors_origins)] if cors_origins else []
    app = LeanApp(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: http_error, Exception: server_error},
    )
    app.serve_lean(lean, cors_origins)  # the turn routes without Starlette's routing (lean.py)
    app.state.agents = {a.name: a for a in served}
    return app


def _describe(agent: Agent, base: str) -> dict[str, Any]:
    """An agent as the listing shows it, with Genkit's action metadata."""
    out: dict[str, Any] = {"key": f"/agent/{agent.name}", "name": agent.name, "path": f"{base}/{agent.name}"}
    if agent.description:
        out["description"] = agent.description
    managed = agent.state_management
    out["metadata"] = {"agent": {"stateManagement": managed, "abortable": agent.store is not None}}
    return out


def _id_field(data: dict[str, Any], camel: str, snake: str) -> str | None:
    value = data.get(camel, data.get(snake))
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise RequestError(f"'{camel}' must be a non-empty string")
    return value


@dataclass(frozen=True)
class _AgentRoutes:
    """The POST endpoints of one agent."""

    agent: Agent
    options: RouteOptions

    async def _data(
        self, request: Request, keys: tuple[str, ...] = _COMPANION_KEYS, fields: tuple[str, ...] = ()
    ) -> tuple[dict[str, Any], Any]:
        """The body and its ``data``; a companion's `fields` are the only keys its ``data`` takes."""
        body = parse_envelope(
            await read_body(request, self.options.max_body_bytes, self.options.body_timeout), keys=keys
        )
        if fields:
            check_fields(body["data"], fields, "data")
        return body, body["data"]

    async def _ids(self, request: Request, verb: str, *names: tuple[str, str]) -> list[str]:
        """The ids a companion endpoint takes in its ``data``, each named (camel, snake); all required."""
        _, data = await self._data(request, fields=tuple(n for pair in names for n in pair))
        found = [_id_field(data, *pair) if isinstance(data, dict) else None for pair in names]
        if any(v is None for v in found):
            wanted = ", ".join(f'"{camel}": "..."' for camel, _ in names)
            raise RequestError(f'{verb} takes {{"data": {{{wanted}}}}}')
        return [v for v in found if v is not None]

    async def turn(self, request: Request) -> ASGIApp:
        """The turn route through Starlette (`nb_agents.server.lean` serves it without)."""
        raw = await read_body(request, self.options.max_body_bytes, self.options.body_timeout)
        query = dict(request.query_params)
        streaming = wants_stream(request.headers.get("accept", ""), query)
        return await self.turn_response(raw, query, streaming, request.state.nba_context)

    async def turn_response(
        self, raw: bytes, query: dict[str, str], streaming: bool, context: dict[str, Any]
    ) -> ASGIApp:
        """The turn a request body asks for, checked (`nb_agents.server.request`), as a response."""
        body = parse_envelope(raw, keys=("data", "init", "config"))
        data = body["data"]
        check_turn_fields(body)
        parts = count_parts(body)
        if parts > self.options.max_parts:
            raise RequestError(
                f"the request carries {parts} parts (message, resume answers and state together); "
                f"this server accepts at most {self.options.max_parts} (max_parts)"
            )
        inp = validate(AgentInput, data, "data")
        raw_init = body.get("init")
        init = AgentInit() if raw_init is None else validate(AgentInit, raw_init, "init")
        query_session = query.get("session_id")
        if query_session and not init.session_id:
            # Genkit FastAPI's shortcut: POST /agent?session_id=... continues that session
            init = init.model_copy(update={"session_id": query_session})
        options = CallOptions(config=call_config(body, self.options.config_keys), context=context)
        if streaming:  # a stream's 200 goes out at once: refuse what the request carries first
            check_turn_values(inp, init, store_backed=self.agent.store is not None)
        return TurnResponse(
            self.agent,
            inp,
            init,
            options=options,
            streaming=streaming,
            debug=self.options.debug,
            write_timeout=self.options.write_timeout,
        )

    async def get_snapshot(self, request: Request) -> ASGIApp:
        _, data = await self._data(request, fields=_SNAPSHOT_ID + _SESSION_ID)
        if not isinstance(data, dict):
            raise RequestError(
                'getSnapshot takes {"data": {"snapshotId": "..."}} or {"data": {"sessionId": "..."}}'
            )
        snapshot_id = _id_field(data, "snapshotId", "snapshot_id")
        session_id = _id_field(data, "sessionId", "session_id")
        if (snapshot_id is None) == (session_id is None):
            raise RequestError("getSnapshot needs exactly one of 'snapshotId' and 'sessionId'")
        snap = await self.agent.get_snapshot(
            snapshot_id, session_id=session_id, context=request.state.nba_context
        )
        if snap is None:
            what = f"Snapshot {snapshot_id}" if snapshot_id else f"Session {session_id}"
            raise NotFoundError(f"{what} not found.")
        wire = snap.to_wire()
        for private in _PRIVATE_SNAPSHOT_FIELDS:  # nb_agents' own bookkeeping: Genkit's clients refuse it
            wire.pop(private, None)
        return JSONResponse({"result": outgoing(wire, debug=self.options.debug)})

    async def abort(self, request: Request) -> ASGIApp:
        (snapshot_id,) = await self._ids(request, "abort", _SNAPSHOT_ID)
        previous = await self.agent.abort(snapshot_id, context=request.state.nba_context)
        result: dict[str, Any] = {"snapshotId": snapshot_id}
        if previous is not None:
            result["status"] = previous
        return JSONResponse({"result": result})

    async def rules(self, request: Request) -> ASGIApp:
        (session_id,) = await self._ids(request, "rules", _SESSION_ID)
        found = await self.agent.rules(session_id, context=request.state.nba_context)
        return JSONResponse({"result": {"rules": [r.to_dict() for r in found]}})

    async def pending(self, request: Request) -> ASGIApp:
        _, data = await self._data(request, fields=("tool", "olderThan", "older_than"))
        data = data if data is not None else {}
        if not isinstance(data, dict):
            raise RequestError('pending takes {"data": {"tool"?: "...", "olderThan"?: seconds}}')
        older = data.get("olderThan", data.get("older_than"))
        if older is not None and (isinstance(older, bool) or not isinstance(older, int | float)):
            raise RequestError("'olderThan' must be a number of seconds")
        tool = data.get("tool")
        if tool is not None and not isinstance(tool, str | list):
            raise RequestError("'tool' must be a tool name or a list of names")
        turns = await self.agent.pending(context=request.state.nba_context, tool=tool, older_than=older)
        return JSONResponse(
            {"result": {"pending": [outgoing(turn_to_wire(t), debug=self.options.debug) for t in turns]}}
        )

    async def revoke_rule(self, request: Request) -> ASGIApp:
        session_id, rule_id = await self._ids(request, "revokeRule", _SESSION_ID, _RULE_ID)
        rule = await self.agent.revoke_rule(session_id, rule_id, context=request.state.nba_context)
        return JSONResponse({"result": rule.to_dict()})
