"""The PostgreSQL tests' fixtures: the throwaway server (tests/pg.py) and a fresh database per test."""

from __future__ import annotations

from collections.abc import Iterator

import pg
import pytest


@pytest.fixture(scope="session")
def pg_server() -> Iterator[pg.PgServer]:
    srv = pg.server()
    print(f"\nPostgreSQL: initdb {srv.initdb_seconds:.2f} s, server up in {srv.start_seconds:.2f} s")
    yield srv
    pg.stop_server()


@pytest.fixture
def dsn(pg_server: pg.PgServer) -> str:
    return pg_server.create_database()
