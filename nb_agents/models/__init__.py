"""Models: the `Model` protocol, name resolution and the provider error tree.

The built-in providers live in `nb_agents.models.openai_compat`,
`nb_agents.models.gemini` and `nb_agents.models.anthropic` and are imported
only when a name (``openai/...``, ``ollama/...``, ``googleai/...``,
``anthropic/...``) or your code needs them; `nb_agents.models.defaults`
picks a real model when an API key is set.
"""

from .base import Model, ModelChunkSink, register_model, register_provider, resolve_model
from .errors import (
    AuthenticationError,
    BadRequestError,
    MissingApiKeyError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelPermissionDeniedError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
    OverloadedError,
    RateLimitError,
)

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "MissingApiKeyError",
    "Model",
    "ModelChunkSink",
    "ModelConnectionError",
    "ModelError",
    "ModelNotFoundError",
    "ModelPermissionDeniedError",
    "ModelResponseError",
    "ModelServerError",
    "ModelTimeoutError",
    "OverloadedError",
    "RateLimitError",
    "register_model",
    "register_provider",
    "resolve_model",
]
