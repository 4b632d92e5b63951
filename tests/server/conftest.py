"""The `serve` fixture: a real uvicorn server on 127.0.0.1 per call, stopped after the test.

``serve(agents_or_app, **create_app_kwargs)`` returns the server's base URL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import nb_agents as nba
from nb_agents.server import create_app

from .live import LiveServer

Serve = Callable[..., str]


@pytest.fixture
def serve() -> Iterator[Serve]:
    servers: list[LiveServer] = []

    def start(target: Any, **kwargs: Any) -> str:
        app = (
            target if callable(target) and not isinstance(target, nba.Agent) else create_app(target, **kwargs)
        )
        server = LiveServer(app)
        server.start()
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.stop()
