"""The ``nb-agents`` command: ``nb-agents serve module:attr`` runs agents under uvicorn.

``attr`` names an `Agent`, a list (or tuple) of agents, or a ready ASGI app. The
target is imported with the current directory on ``sys.path``, as uvicorn does;
``path/to/app.py:agent`` works too.

``--store URL`` gives every store-backed agent that store in place of the one it
was defined with, so a demo defined on ``InMemorySessionStore()`` can be served
on SQLite unchanged. Client-managed agents (no store) are left as they are: a
store would change the protocol their clients speak. URLs: ``memory://``,
``sqlite:///relative.db`` or ``sqlite:////absolute.db`` (SQLAlchemy style),
``file://DIR`` (``file:///srv/sessions`` is absolute, ``file://sessions`` relative),
and ``postgresql://user:password@host:port/dbname`` (any libpq connection URI,
``postgres://`` too; needs the ``postgres`` extra), which several server processes
can share behind one load balancer. libpq also reads ``PGPASSWORD`` and
``~/.pgpass``, which keep the password out of the process list.

The server is bounded: ``--max-connections`` (by default the file-descriptor
limit less a reserve of 256) caps open connections and requests in flight, answering
503 beyond it; ``--header-timeout`` closes a connection whose request headers are
late (408), ``--body-timeout`` a request whose body is, and ``--write-timeout``
drops a streaming client that stopped reading (see `nb_agents.server.guard`).
Sessions kept in memory (``memory://``, or an agent's unbounded
`InMemorySessionStore`) are bounded too: ``--max-sessions`` (10,000) and
``--session-ttl`` (24 hours unused); a session evicted while it waited for an
answer is logged and answered ``NOT_FOUND`` naming the eviction
(`nb_agents.stores._memory_evict`). A store the agent was given with bounds of
its own keeps them.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Unpack

from ..agent import Agent
from ..errors import InvalidArgumentError
from ..stores import FileSessionStore, InMemorySessionStore, SessionStore, SqliteSessionStore
from ..stores.base import HEARTBEAT_TIMEOUT
from .app import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_PARTS,
    DEFAULT_WRITE_TIMEOUT,
    AppOptions,
    create_app,
)
from .auth import api_key
from .guard import ACCEPT_BATCH, default_max_connections, guarded_protocol

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_TTL",
    "CliError",
    "build_app",
    "load_target",
    "main",
    "parse_store_url",
]

DEFAULT_MAX_SESSIONS = 10_000
"""The most sessions `nb-agents serve` keeps in an in-memory store (least recently used go first)."""
DEFAULT_SESSION_TTL = 24 * 3600.0
"""Seconds a session may go unused in an in-memory store under `nb-agents serve` before it goes."""

_SCHEMES = "memory://, sqlite:///PATH.db, file://DIR or postgresql://USER@HOST:PORT/DBNAME"


class CliError(InvalidArgumentError):
    """A command-line mistake, reported as one line without a traceback."""


def parse_store_url(url: str, *, heartbeat_timeout: float | None = None) -> SessionStore:
    """The store a ``--store`` URL names.

    Example:
        >>> type(parse_store_url("memory://")).__name__
        'InMemorySessionStore'
    """
    hb = heartbeat_timeout if heartbeat_timeout is not None else HEARTBEAT_TIMEOUT
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise CliError(f"--store {url!r} is not a URL; use {_SCHEMES}")
    if scheme == "memory":
        return InMemorySessionStore(heartbeat_timeout=hb)
    if scheme == "sqlite":
        path = rest[1:] if rest.startswith("/") else rest
        if not path:
            raise CliError("--store sqlite:/// needs a file path, e.g. sqlite:///agents.db")
        return SqliteSessionStore(path, heartbeat_timeout=hb)
    if scheme == "file":
        if not rest:
            raise CliError("--store file:// needs a directory, e.g. file:///srv/sessions")
        return FileSessionStore(rest, heartbeat_timeout=hb)
    if scheme in ("postgresql", "postgres"):
        return _postgres_store(url, hb)
    raise CliError(f"--store scheme {scheme!r} is not supported; use {_SCHEMES}")


def _postgres_store(url: str, heartbeat_timeout: float | timedelta) -> SessionStore:
    try:
        from ..stores.postgres import PostgresSessionStore
    except ImportError as exc:
        raise CliError(f"--store postgresql:// needs psycopg: {exc}") from None
    try:
        return PostgresSessionStore(url, heartbeat_timeout=heartbeat_timeout)
    except ValueError as exc:  # the message names what is wrong, never the password
        raise CliError(f"--store: {exc}") from None


def load_target(spec: str) -> Any:
    """Import ``module:attr`` (or ``path/to/file.py:attr``) and return the attribute."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CliError(f"{spec!r} is not of the form module:attribute (e.g. bank:agent)")
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise CliError(f"no file {module_name}")
            loader_spec = importlib.util.spec_from_file_location(path.stem, path)
            assert loader_spec is not None and loader_spec.loader is not None
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[path.stem] = module
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise CliError(f"could not import {module_name!r}: {exc}") from exc
    value: Any = module
    for step in attr.split("."):
        if not hasattr(value, step):
            raise CliError(f"module {module_name!r} has no attribute {attr!r}")
        value = getattr(value, step)
    return value


def build_app(
    target: Any,
    *,
    store: str | None = None,
    heartbeat_timeout: float | None = None,
    max_sessions: int | None = DEFAULT_MAX_SESSIONS,
    session_ttl: float | None = DEFAULT_SESSION_TTL,
    **app_options: Unpack[AppOptions],
) -> tuple[Any, list[Agent]]:
    """The ASGI app to serve for `target`, and the agents it serves (none for a ready app).

    An `InMemorySessionStore` without bounds of its own is bounded by `max_sessions`
    and `session_ttl` (seconds; None for no bound). `app_options` go to `create_app`.
    """
    if isinstance(target, Agent):
        agents = [target]
    elif isinstance(target, list | tuple) and target and all(isinstance(a, Agent) for a in target):
        agents = list(target)
    elif callable(target) and not isinstance(target, type):
        if store is not None:
            raise CliError(
                "--store applies to agents; the target is an ASGI app, so configure its stores there"
            )
        return target, []
    else:
        raise CliError(
            f"the target is a {type(target).__name__}; expected an Agent, a list of agents or an ASGI app"
        )
    if store is not None:
        backed = [a for a in agents if a.store is not None]
        if not backed:
            raise CliError(
                "--store was given but no agent has a store (they all use client-managed state); "
                "define them with store=... to serve them server-managed"
            )
        shared = parse_store_url(store, heartbeat_timeout=heartbeat_timeout)
        for agent in backed:
            agent.store = shared
    for agent in agents:
        kept = agent.store
        if isinstance(kept, InMemorySessionStore) and kept.max_sessions is None and kept.ttl is None:
            kept.bound(max_sessions=max_sessions, ttl=session_ttl)
    return create_app(agents, **app_options), agents


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nb-agents", description="nb_agents command line")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve agents over HTTP (Genkit's agent protocol)",
        description="Serve agents over HTTP with Genkit's agent protocol, under uvicorn.",
    )
    serve.add_argument("target", help="module:attribute naming an Agent, a list of agents, or an ASGI app")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to bind (default: 8000)")
    serve.add_argument("--store", help=f"replace the store of store-backed agents: {_SCHEMES}")
    serve.add_argument(
        "--heartbeat-timeout",
        type=float,
        default=None,
        help="seconds after which a running turn whose process stopped beating may be taken over "
        "(default 60; the --store's, so every server sharing it should agree)",
    )
    serve.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULT_MAX_SESSIONS,
        help="sessions an in-memory store keeps, least recently used going first; one waiting for an "
        f"answer too, with a warning (default {DEFAULT_MAX_SESSIONS}; 0: no bound)",
    )
    serve.add_argument(
        "--session-ttl",
        type=float,
        default=DEFAULT_SESSION_TTL,
        metavar="SECONDS",
        help="seconds a session may go unused in an in-memory store before it goes, with a warning if "
        f"it waited for an answer (default {DEFAULT_SESSION_TTL:g}, a day; 0: no bound)",
    )
    serve.add_argument("--prefix", default="", help="path prefix for every route, e.g. /api")
    serve.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    serve.add_argument("--max-parts", type=int, default=DEFAULT_MAX_PARTS)
    serve.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="open connections and requests in flight; 503 beyond (default: the file limit less 256)",
    )
    serve.add_argument(
        "--header-timeout", type=float, default=10.0, help="seconds for a request's headers (default 10)"
    )
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=DEFAULT_BODY_TIMEOUT,
        help="seconds for a request's body (default 30)",
    )
    serve.add_argument(
        "--write-timeout",
        type=float,
        default=DEFAULT_WRITE_TIMEOUT,
        help="seconds a streaming client may stop reading before it is dropped (default 30)",
    )
    serve.add_argument(
        "--keep-alive-timeout",
        type=float,
        default=5.0,
        help="seconds an idle connection stays open (default 5)",
    )
    serve.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="require an API key (the Authorization header) read from this environment variable: "
        "KEY, or uid=KEY,uid=KEY for a principal per key",
    )
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an origin whose pages may call the agents (repeatable); none by default",
    )
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="serve beyond 127.0.0.1 without authentication (anyone who reaches the port can act)",
    )
    serve.add_argument(
        "--debug", action="store_true", help="send tracebacks to clients (never in production)"
    )
    serve.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        target = load_target(args.target)
        app, agents = build_app(
            target,
            store=args.store,
            heartbeat_timeout=args.heartbeat_timeout,
            prefix=args.prefix,
            max_body_bytes=args.max_body_bytes,
            max_parts=args.max_parts,
            body_timeout=args.body_timeout,
            write_timeout=args.write_timeout,
            context_provider=api_key(env=args.api_key_env) if args.api_key_env else None,
            cors_origins=args.cors_origin,
            debug=args.debug,
            max_sessions=args.max_sessions or None,
            session_ttl=args.session_ttl or None,
        )
        if agents and not args.api_key_env and not args.insecure_no_auth and not _loopback(args.host):
            raise CliError(
                f"--host {args.host} reaches beyond this machine, and nothing checks who calls: "
                "require an API key with --api-key-env VAR, or accept the risk with --insecure-no-auth"
            )
        limit = args.max_connections if args.max_connections is not None else default_max_connections()
        if limit <= 0 or args.header_timeout <= 0 or args.keep_alive_timeout <= 0:
            raise CliError("--max-connections, --header-timeout and --keep-alive-timeout must be positive")
    except (CliError, ValueError) as exc:
        print(f"nb-agents: error: {exc.message if isinstance(exc, CliError) else exc}", file=sys.stderr)
        return 2
    import uvicorn
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    base = f"http://{args.host}:{args.port}{'/' + args.prefix.strip('/') if args.prefix.strip('/') else ''}"
    for agent in agents:
        print(f"nb-agents: {agent.name} at {base}/{agent.name} ({_state_line(agent)})")
    print(
        f"nb-agents: at most {limit} connections; headers within {args.header_timeout:g} s, "
        f"bodies within {args.body_timeout:g} s"
    )
    if args.api_key_env:
        print(f"nb-agents: callers need an API key (from ${args.api_key_env}); sessions belong to their key")
    elif agents:
        print("nb-agents: no authentication: anyone who can reach this port can read and answer sessions")
    # everything loaded so far lives as long as the server: keep it out of the
    # collector's full scans, which otherwise grow with every module and agent
    gc.collect()
    gc.freeze()
    protocol = guarded_protocol(AutoHTTPProtocol, max_connections=limit, header_timeout=args.header_timeout)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        http=protocol,
        limit_concurrency=limit + 1,  # uvicorn counts the request's own connection too
        backlog=ACCEPT_BATCH,
        timeout_keep_alive=int(args.keep_alive_timeout) or 1,
    )
    return 0


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _state_line(agent: Agent) -> str:
    if agent.store is None:
        return "client-managed state"
    store = agent.store
    if isinstance(store, InMemorySessionStore):
        bounds = [f"at most {store.max_sessions} sessions"] if store.max_sessions else []
        if store.ttl is not None:
            bounds.append(f"each gone after {store.ttl.total_seconds():g} s unused")
        kept = ", ".join(bounds) or "unbounded"
        return f"server-managed state in memory ({kept}): it dies with this process; use --store to keep it"
    return f"server-managed state in {type(agent.store).__name__}"
