"""Fixtures for the MCP tests: real MCP servers, and agents that use them.

* ``mcp_js``: the npm servers (``server-everything``, ``server-filesystem``),
  installed on first use from ``js/package-lock.json`` (`mcp_toolchain`); skipped
  without Node.js, npm or the registry, a failure under ``CI=true``.
* ``open_servers``: a list the test appends its `MCPServer` objects to; every
  one is closed after the test, so no server process outlives it.
* ``notes_server``: nb_agents' own FastMCP demo server (``nb_agents.mcp.demo``)
  over stdio, on a fresh folder of notes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import mcp_toolchain
import pytest

from nb_agents.mcp import MCPServer

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers"


@pytest.fixture(scope="session")
def mcp_js() -> Path:
    try:
        return mcp_toolchain.ensure_servers()
    except mcp_toolchain.Unavailable as exc:
        if mcp_toolchain.in_ci():
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc))


@pytest.fixture
def open_servers() -> Iterator[list[MCPServer]]:
    servers: list[MCPServer] = []
    yield servers
    for server in servers:
        server.aclose_sync()


@pytest.fixture
def everything(mcp_js: Path, open_servers: list[MCPServer]) -> MCPServer:
    # trusted: these tests are about what a server's annotations mean once they are believed
    server = MCPServer.stdio(
        mcp_toolchain.server_command(mcp_js, "server-everything"), name="everything", trusted=True
    )
    open_servers.append(server)
    return server


@pytest.fixture
def fs_root(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    root.mkdir()
    (root / "hello.txt").write_text("hello from the filesystem server\n")
    return root


@pytest.fixture
def filesystem(mcp_js: Path, fs_root: Path, open_servers: list[MCPServer]) -> MCPServer:
    command = mcp_toolchain.server_command(mcp_js, "server-filesystem", str(fs_root))
    server = MCPServer.stdio(command, name="fs", prefix=True, trusted=True)
    open_servers.append(server)
    return server


@pytest.fixture
def notes_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "groceries.txt").write_text("milk eggs bread\n")
    (folder / "ideas.txt").write_text("an MCP server for notes\n")
    return folder


@pytest.fixture
def notes_server(notes_dir: Path, open_servers: list[MCPServer]) -> MCPServer:
    server = MCPServer.stdio(
        [sys.executable, "-m", "nb_agents.mcp.demo", "--dir", str(notes_dir)], name="notes", trusted=True
    )
    open_servers.append(server)
    return server
