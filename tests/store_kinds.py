"""Every kind of session store the tests run against, and how to make one."""

from __future__ import annotations

from pathlib import Path

import nb_agents as nba

STORE_KINDS = ["memory", "file", "sqlite", "postgres"]


def make_store(kind: str, path: Path) -> nba.SessionStore:
    """A fresh store of `kind` ("memory", "file", "sqlite" or "postgres") under `path`."""
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
