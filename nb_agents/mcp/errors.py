"""What can go wrong with an MCP server, each error naming the server.

The MCP errors sit in nb_agents' one tree (see `nb_agents.errors`), under the
status class that says what a caller can do about them::

    NbAgentsError
    └── MCPError                      any MCP failure; ``server`` names the server
        ├── MCPConnectionError        UNAVAILABLE: would not start, died, closed the connection
        ├── MCPSchemaError            FAILED_PRECONDITION: a tool listing we cannot use
        └── MCPCallLostError          FAILED_PRECONDITION: an answer to an elicitation whose
                                      call is gone (the process restarted, the server died)

Each is also an instance of the matching status class (`UnavailableError`,
`FailedPreconditionError`), so ``except nba.UnavailableError`` catches a dead
server as it catches an unreachable remote agent. Raised in a turn, they end
it ``failed`` with the message; the session keeps everything before it.
"""

from __future__ import annotations

from typing import Any

from ..errors import FailedPreconditionError, NbAgentsError, UnavailableError

__all__ = ["MCPCallLostError", "MCPConnectionError", "MCPError", "MCPSchemaError"]


class MCPError(NbAgentsError):
    """An MCP server failed us.

    Attributes:
        server: The server's name (``MCPServer(..., name=)``).
    """

    def __init__(self, message: str, *, server: str, details: Any = None) -> None:
        super().__init__(message, details=details)
        self.server = server


class MCPConnectionError(MCPError, UnavailableError):
    """The server could not be started or reached, or it went away; the next turn reconnects."""

    status = "UNAVAILABLE"


class MCPSchemaError(MCPError, FailedPreconditionError):
    """The server listed a tool we cannot offer the model (a malformed schema, a bad listing)."""

    status = "FAILED_PRECONDITION"


class MCPCallLostError(MCPError, FailedPreconditionError):
    """An elicitation was answered, but the tool call waiting for it is gone (nothing was sent)."""

    status = "FAILED_PRECONDITION"
    ran_nothing = True
