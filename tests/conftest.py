"""Shared fixtures: the anyio backend, and a session store of every kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_kinds import STORE_KINDS, make_store

import nb_agents as nba


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> nba.SessionStore:
    """One test run per store kind."""
    return make_store(request.param, tmp_path)
