"""Models: the `Model` protocol, name resolution and the provider error tree.

The built-in providers live in `nb_agents.models.openai_compat`,
`nb_agents.models.gemini` and `nb_agents.models.anthropic` and are imported
only when a name (``openai/...``, ``ollama/...``, ``googleai/...``,
``anthropic/...``) or your code needs them; `nb_agents.models.defaults`
picks a real model when an API key is set.
"""

from . import errors
from .base import Model, ModelChunkSink, register_model, register_provider, resolve_model
from .errors import *  # noqa: F403 - the provider error tree, as `errors.__all__` names it

__all__ = ["Model", "ModelChunkSink", "register_model", "register_provider", "resolve_model"]
__all__ += errors.__all__
