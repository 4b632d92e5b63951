"""The turn engine: what runs an agent's turns. Private: the public faces are
`nb_agents.Agent`, `nb_agents.Chat`, `nb_agents.AgentConnection` and the server.

It takes a plain `AgentSpec` (a name, a turn handler, a store, a state signer,
the tools and an input check) and never imports the facades built on it::

    Invocation (invocation.py)      one call: init -> session, a turn per input, outputs
    ├── load_session (loading.py)   init -> the session a turn starts from
    ├── claim_resume (exactly_once.py)  the compare-and-swap that runs an answer once
    ├── expire, check_deadlines (expiry.py)  defaults of pauses past their deadline
    ├── keep_alive (heartbeat.py)   the pending row of a turn nobody watches
    ├── StateSigner (signing.py)    HMAC over client-managed state
    └── the handler, e.g. PromptTurn (prompt.py): model calls and tool rounds
        ├── run_tools, resolve_resume (tool_round.py)
        └── validate_resume (resume.py), before anything runs
"""

from .invocation import Invocation, expire, invoke
from .prompt import PromptTurn
from .signing import StateSigner
from .spec import AgentSpec, InputCheck

__all__ = ["AgentSpec", "InputCheck", "Invocation", "PromptTurn", "expire", "StateSigner", "invoke"]
