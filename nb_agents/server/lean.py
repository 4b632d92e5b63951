"""The turn routes served on a lean ASGI path: no routing table, Request or Response objects.

`create_app` returns a `LeanApp`: the Starlette app it always was (routes,
middleware, exception handlers, ``app.state``), except that ``POST /{name}``
(an agent's turn, the request every client makes) is answered here directly:
the same checks in the same order, with the same answers (`TurnRoute`):

* the ``Content-Type`` must be ``application/json`` (415, unread);
* who is calling (the context provider, given a Starlette ``Request`` as
  before; 401/403);
* the body within ``max_body_bytes`` and ``body_timeout`` (413/408,
  `nb_agents.server.asgi.read_asgi_body`), then the request's own checks
  (`nb_agents.server.request`) and the turn (`nb_agents.server.turn`);
* an error thrown before the answer starts: its ``{"status", "message"}``
  with its HTTP code; an unexpected one: logged, 500 ``INTERNAL``.

CORS applies as on every other route (the same `CORSMiddleware`, around this
path only). Any other method or path, a trailing slash included, goes through
Starlette; so does every request once middleware or an exception handler was
added to the app after `create_app`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import NbAgentsError, RequestError
from .asgi import header, read_asgi_body, send_json
from .auth import ContextProvider, resolve_context
from .errors import error_body, error_response

__all__ = ["LeanApp", "RouteOptions", "TurnRoute", "cors", "query_params", "wants_stream"]

TurnHandler = Callable[[bytes, dict[str, str], bool, dict[str, Any]], Awaitable[ASGIApp]]
"""(body, query parameters, streaming, request context) -> the turn's response."""


@dataclass(frozen=True, kw_only=True)
class RouteOptions:
    """The limits and switches `create_app` was given, which every route of the app reads."""

    max_body_bytes: int
    max_parts: int
    body_timeout: float
    write_timeout: float
    config_keys: frozenset[str] | None
    context_provider: ContextProvider | None
    debug: bool


def cors(app: ASGIApp, origins: Sequence[str]) -> ASGIApp:
    """`app` behind the CORS policy `create_app` applies to every route."""
    return CORSMiddleware(
        app,
        allow_origins=list(origins),
        allow_methods=["GET", "POST"],
        allow_headers=["authorization", "content-type", "accept"],
        max_age=600,
    )


def query_params(scope: Scope) -> dict[str, str]:
    """The query's parameters as Starlette reads them (the last of a repeated one)."""
    raw = scope.get("query_string", b"")
    if not raw:
        return {}
    return dict(parse_qsl(raw.decode("latin-1"), keep_blank_values=True))


def wants_stream(accept: str, query: dict[str, str]) -> bool:
    """An SSE answer: the ``Accept`` header names ``text/event-stream``, or the query says ``stream=true``."""
    return "text/event-stream" in accept or query.get("stream", "").lower() == "true"


@dataclass(frozen=True)
class TurnRoute:
    """``POST /{name}``: one agent's turn route (see the module docstring)."""

    turn: TurnHandler
    options: RouteOptions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            response = await self._response(scope, receive)
        except NbAgentsError as exc:
            await error_response(exc, debug=self.options.debug)(scope, receive, send)
            return
        except Exception as exc:
            # a bug on the server: logged by error_body, the client sees INTERNAL (as Starlette's handler)
            await send_json(send, error_body(exc, debug=self.options.debug), 500)
            raise
        await response(scope, receive, send)

    async def _response(self, scope: Scope, receive: Receive) -> ASGIApp:
        kind = (header(scope, b"content-type") or b"").decode("latin-1").partition(";")[0].strip().lower()
        if kind != "application/json":
            # a page on any site can POST text/plain without a preflight: refuse it unread
            raise RequestError(
                "this endpoint takes a JSON body; send Content-Type: application/json "
                f"(got {kind or 'none'})",
                http_code=415,
            )
        context: dict[str, Any] = {}
        opts = self.options
        if opts.context_provider is not None:
            context = await resolve_context(opts.context_provider, Request(scope, receive))
        raw = await read_asgi_body(
            header(scope, b"content-length"), receive, opts.max_body_bytes, opts.body_timeout
        )
        query = query_params(scope)
        accept = (header(scope, b"accept") or b"").decode("latin-1")
        return await self.turn(raw, query, wants_stream(accept, query), context)


class LeanApp(Starlette):
    """A Starlette app whose turn routes (``POST`` on their exact paths) skip its routing.

    Middleware or exception handlers added to the app after `create_app`
    (``app.add_middleware``: an authentication layer, say) would not see the
    lean path: with any, every request goes through Starlette, as before.
    """

    lean_routes: dict[str, ASGIApp]
    lean_app: ASGIApp | None = None  # the turn routes' dispatcher, behind CORS when configured
    _as_created: tuple[int, dict[Any, Any]] = (0, {})

    def serve_lean(self, routes: dict[str, ASGIApp], cors_origins: Sequence[str]) -> None:
        """Answer ``POST`` on each path of `routes` with its app."""
        self.lean_routes = routes
        self.lean_app = cors(self._dispatch, cors_origins) if cors_origins else self._dispatch
        self._as_created = (len(self.user_middleware), dict(self.exception_handlers))

    def build_middleware_stack(self) -> ASGIApp:
        if (len(self.user_middleware), self.exception_handlers) != self._as_created:
            self.lean_app = None  # added to since create_app: everything through Starlette
        return super().build_middleware_stack()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.middleware_stack is None:
            self.middleware_stack = self.build_middleware_stack()
        if self.lean_app is not None and scope["type"] == "http" and scope["method"] == "POST":
            route = self.lean_routes.get(_route_path(scope))
            if route is not None:
                scope["app"] = self
                await self.lean_app(scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.lean_routes[_route_path(scope)](scope, receive, send)


def _route_path(scope: Scope) -> str:
    """The path below the app's ``root_path``, as Starlette's router matches it."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if not root or not path.startswith(root):
        return path
    if path == root:
        return ""
    return path[len(root) :] if path[len(root)] == "/" else path
