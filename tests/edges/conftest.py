"""Fixtures of the edge tests: a store URL of every kind, and `nb-agents serve` processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .served import Served

STORE_URLS = ["memory", "sqlite", "file", "postgres"]


def store_url(kind: str, tmp: Path) -> str:
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp}/agents.db"
    if kind == "file":
        return f"file://{tmp}/sessions"
    from pg import fresh_dsn  # starts the throwaway server (skips without PostgreSQL, fails in CI)
    from psycopg.conninfo import conninfo_to_dict

    p = conninfo_to_dict(fresh_dsn())
    return f"postgresql://{p['user']}@{p['host']}:{p['port']}/{p['dbname']}?connect_timeout=10"


@pytest.fixture(params=STORE_URLS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """``serve(store="sqlite", **Served kwargs)``: a server process, stopped after the test."""
    started: list[Served] = []

    def start(store: str | None = "memory", **kwargs: Any) -> Served:
        url = store_url(store, tmp_path) if store in STORE_URLS else store
        env = {"NBA_LEDGER": str(tmp_path / "ledger.jsonl"), **kwargs.pop("env", {})}
        server = Served(tmp_path, store=url, env=env, **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def ledger(tmp: Path) -> list[dict[str, Any]]:
    import json

    path = tmp / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
