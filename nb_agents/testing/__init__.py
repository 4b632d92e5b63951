"""What nb_agents ships for tests: fake models, and a conformance suite for stores.

`ScriptedModel` plays back a list of responses, one per call, and records
every request; `FunctionModel` answers with a function of the request. Both
speak the same `Model` protocol as the real providers (`.models`).

`nb_agents.testing.stores.StoreConformance` checks a session store against
the contract the engine relies on; it needs pytest, so it is imported from
its own module only (``import nb_agents.testing`` stays light).
"""

from .models import FunctionModel, ScriptedModel

__all__ = ["FunctionModel", "ScriptedModel"]

# They keep the name they had before this was a package (reprs, pickles, docs), as httpx does.
for _cls in (FunctionModel, ScriptedModel):
    _cls.__module__ = __name__
del _cls
