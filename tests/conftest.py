"""Shared fixtures: the anyio backend, and a session store of every kind (closed after its test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from store_kinds import STORE_KINDS, close_stores, make_store

import nb_agents as nba


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _close_stores() -> Iterator[None]:
    """Close the stores `make_store` made during the test, once it is done with them."""
    yield
    close_stores()


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> nba.SessionStore:
    """One test run per store kind."""
    return make_store(request.param, tmp_path)
