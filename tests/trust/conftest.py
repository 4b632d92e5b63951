"""The trust matrix's fixtures: the attacked agent on a store (`local`), or over a real `nb-agents serve`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from edges.served import Served
from store_kinds import make_store
from trust_app import make_agent
from trust_target import Target, serve_trust

import nb_agents as nba

SECRET = "trust-link-secret-0123456789"


@pytest.fixture
async def local(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Target]:
    kind, route = request.param
    ledger = tmp_path / "ledger.jsonl"
    if route != "link":
        yield Target(route, make_agent(make_store(kind, tmp_path), ledger), ledger)
        return
    # the link route: the agent's pauses go to a webhook whose links open its answer page
    import httpx

    from nb_agents.server import create_app

    hook = nba.notify.webhook(
        "http://hooks.test/x",
        secret=SECRET,
        public_url="http://agents.test",
        transport=httpx.MockTransport(lambda req: httpx.Response(200)),
    )
    agent = make_agent(make_store(kind, tmp_path), ledger, on_pause=hook)
    transport = httpx.ASGITransport(app=create_app([agent]))
    async with httpx.AsyncClient(transport=transport, base_url="http://agents.test") as page:
        yield Target(route, agent, ledger, hook=hook, page=page)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Served, nba.Agent, Path]]:
    """A real `nb-agents serve` of the attacked agent, and the same agent on its store in this process."""
    yield from serve_trust(tmp_path_factory.mktemp(f"served-{request.param}"), request.param, nested=False)


@pytest.fixture(params=["http", "http-inbox"])
def over_http(request: pytest.FixtureRequest, served: tuple[Served, nba.Agent, Path]) -> Target:
    server, agent, ledger = served
    return Target(request.param, agent, ledger, front=nba.remote_agent(f"{server.url}/trust"))
