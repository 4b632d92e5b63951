"""MCP servers as agent tools, on the official ``mcp`` SDK 2 (``pip install 'nb_agents[mcp]'``).

An `MCPServer` goes in ``define_agent(..., tools=[...])`` beside ordinary
tools. Its tools are listed on the agent's first turn (the connection opens
then) and carry the server's own JSON schemas::

    from nb_agents.mcp import MCPServer
    fs = MCPServer.stdio(["npx", "@modelcontextprotocol/server-filesystem", "/data"], name="fs")
    web = MCPServer.http("http://127.0.0.1:9000/mcp", headers={"Authorization": "Bearer ..."},
                         name="web")
    agent = nba.define_agent("helper", model=..., tools=[fs, web, other_tool],
                             use=[nba.middleware.ToolApproval()])

What the package owns, one module each:

* `server`: `MCPServer`, its lifecycle (open on first use, reconnect after a
  death, ``aclose``) and the calls held while their turn waits;
* `connection`: the live session on nb_agents' private loop;
* `calls`: one call in flight, as events (progress, a question, the result);
* `tools`: `MCPTool`, a server's tool as an nb_agents `Tool`;
* `approval`: which tools `ToolApproval` holds, from their annotations;
* `elicitation`: a server's question as an interrupt, and its answers;
* `rounds`: a 2026-07-28 server's questions, returned as a result with its
  state: pauses that any process can answer;
* `progress`: progress notifications as stream chunks;
* `errors`: `MCPError` and its kinds, each naming the server.

``import nb_agents`` never imports this package, and this package imports the
SDK only when a server connects.
"""

from .approval import describe_hints, needs_approval, runs_freely
from .elicitation import ElicitAnswer, ElicitationRequest
from .errors import MCPCallLostError, MCPConnectionError, MCPError, MCPSchemaError
from .progress import PROGRESS_KEY, Progress, progress_html, progress_of
from .server import MCPServer
from .tools import MCPTool

__all__ = [
    "PROGRESS_KEY",
    "ElicitAnswer",
    "ElicitationRequest",
    "MCPCallLostError",
    "MCPConnectionError",
    "MCPError",
    "MCPSchemaError",
    "MCPServer",
    "MCPTool",
    "Progress",
    "describe_hints",
    "needs_approval",
    "progress_html",
    "progress_of",
    "runs_freely",
]
