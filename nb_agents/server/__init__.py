"""Serve agents over HTTP with Genkit's agent protocol (needs the ``server`` extra).

`create_app` builds a Starlette ASGI app (`nb_agents.server.app`); the
``nb-agents serve module:agent`` command runs one under uvicorn
(`nb_agents.server.cli`). Genkit's own clients (JS ``remoteAgent``, Python
``remote_agent``) and `nb_agents.remote_agent` drive it.

One difference between those clients matters: Genkit's Python client (0.12)
rebuilds a client-managed state blob every turn instead of sending it back
verbatim, so it drops the ``signature`` an agent with ``state_secret=`` adds,
and such an agent answers it 403 ``PERMISSION_DENIED``. Genkit's JS client and
`nb_agents.remote_agent` send the blob back unchanged.

Example:
    >>> import nb_agents as nba
    >>> from nb_agents.server import create_app
    >>> from nb_agents.testing import FunctionModel
    >>> app = create_app([nba.define_agent("echo", model=FunctionModel(lambda req: "hi"))])
"""

from .app import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_PARTS, create_app
from .auth import ContextProvider, api_key

__all__ = ["DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_PARTS", "ContextProvider", "api_key", "create_app"]
