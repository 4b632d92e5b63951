"""The local MCP test servers (``servers/*.py``) and how a test starts one over stdio.

Kept out of ``conftest.py`` so tests import it by a name no other test folder shares.
"""

from __future__ import annotations

import sys
from pathlib import Path

from nb_agents.mcp import MCPServer

SERVERS = Path(__file__).resolve().parent / "servers"


def script_server(name: str, *args: str, **options: object) -> MCPServer:
    """A server from ``servers/<name>.py`` over stdio (trusted unless ``trusted=False`` is given)."""
    options.setdefault("trusted", True)
    return MCPServer.stdio([sys.executable, str(SERVERS / f"{name}.py"), *args], name=name, **options)  # type: ignore[arg-type]
