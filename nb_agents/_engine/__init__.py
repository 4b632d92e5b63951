"""The turn engine: what runs an agent's turns. Private: the public faces are
`nb_agents.Agent`, `nb_agents.Chat`, `nb_agents.AgentConnection` and the server.

Its door is `Engine` (every verb of an agent is one call on it), built on a plain
`AgentSpec`; it never imports the facades built on it. Behind the door::

    Engine (engine.py)              every agent verb: invoke, open, snapshots, listings, forks, rules
    └── Invocation (invocation.py)  one call: init -> session, a turn per input, outputs
        ├── load_session (loading.py)   init -> the session a turn starts from
        └── Turn (turn.py)              one turn, as its steps:
            ├── check        deadlines (expiry.py), the handler's input check (resume.py)
            ├── decide       who decided each answered call runs (decision.py)
            ├── claim        the compare-and-swap that runs an answer once (exactly_once.py)
            ├── run          the handler, e.g. PromptTurn (prompt.py): model calls and tool
            │                rounds (tool_round.py), each call through decision.decide
            └── record       the final row, the audit and the rules, in one write
                             (records.py, audit.py)

Besides the door it exports what a transport checks before it hands a request in
(`check_input`, `check_init_ids`, `check_json`) and the mark of a fork's session id.
"""

from .engine import Engine
from .forking import FORK_MARK
from .limits import check_init_ids, check_input, check_json
from .ownership import Authorize
from .prompt import PromptTurn
from .signing import StateSigner
from .spec import AgentSpec, Decide, InputCheck

__all__ = [
    "FORK_MARK",
    "AgentSpec",
    "Authorize",
    "Decide",
    "Engine",
    "InputCheck",
    "PromptTurn",
    "StateSigner",
    "check_init_ids",
    "check_input",
    "check_json",
]
