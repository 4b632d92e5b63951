"""Shared fixtures: the anyio backend, and a session store of every kind."""

from __future__ import annotations

from pathlib import Path

import pytest

import nb_agents as nba

STORE_KINDS = ["memory", "file", "sqlite"]


def make_store(kind: str, path: Path) -> nba.SessionStore:
    """A fresh store of `kind` ("memory", "file" or "sqlite") under `path`."""
    if kind == "memory":
        return nba.InMemorySessionStore()
    if kind == "file":
        from nb_agents.stores.file import FileSessionStore

        return FileSessionStore(path / "sessions")
    if kind == "sqlite":
        from nb_agents.stores.sqlite import SqliteSessionStore

        return SqliteSessionStore(path / "agents.db")
    raise ValueError(kind)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> nba.SessionStore:
    """One test run per store kind."""
    return make_store(request.param, tmp_path)
