"""Every kind of session store the tests run against, and how to make one.

A store made here is closed when the test that made it ends (`close_stores`,
called by an autouse fixture in conftest.py): a pooled connection left to the
garbage collector would warn at some random later moment.
"""

from __future__ import annotations

from pathlib import Path

import nb_agents as nba

STORE_KINDS = ["memory", "file", "sqlite", "postgres"]

_OPEN: list[nba.SessionStore] = []


def make_store(kind: str, path: Path) -> nba.SessionStore:
    """A fresh store of `kind` ("memory", "file", "sqlite" or "postgres") under `path`."""
    store = _new(kind, path)
    _OPEN.append(store)
    return store


def close_stores() -> None:
    """Close every store `make_store` made (a store reopens its connections if used again)."""
    while _OPEN:
        close = getattr(_OPEN.pop(), "close", None)
        if close is not None:
            close()


def _new(kind: str, path: Path) -> nba.SessionStore:
    if kind == "memory":
        return nba.InMemorySessionStore()
    if kind == "file":
        from nb_agents.stores.file import FileSessionStore

        return FileSessionStore(path / "sessions")
    if kind == "sqlite":
        from nb_agents.stores.sqlite import SqliteSessionStore

        return SqliteSessionStore(path / "agents.db")
    if kind == "postgres":
        from pg import fresh_dsn  # starts a throwaway server (skips without PostgreSQL, fails in CI)

        from nb_agents.stores.postgres import PostgresSessionStore

        return PostgresSessionStore(fresh_dsn())
    raise ValueError(kind)
