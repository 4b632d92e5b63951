"""The model protocol and the registry that resolves model names.

A model takes a Genkit `GenerateRequest` and returns a `GenerateResponse`,
optionally streaming `ModelResponseChunk` values to a sink as it goes.

Names resolve in this order: an exact name given to `register_model`; then
a ``prefix/model`` name through the factory `register_provider` gave that
prefix; then the built-in providers, imported on first use: ``openai/...``,
``ollama/...`` (OpenAI-compatible), ``googleai/...`` (Gemini) and
``anthropic/...``. Resolving never sends a request and never needs a key: a
built-in model looks its key up on its first call.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from ..errors import NotFoundError
from ..types import GenerateRequest, GenerateResponse, ModelResponseChunk

__all__ = ["Model", "ModelChunkSink", "register_model", "register_provider", "resolve_model"]

ModelChunkSink = Callable[[ModelResponseChunk], Awaitable[None]]


@runtime_checkable
class Model(Protocol):
    """Anything with a name and an async ``generate``."""

    name: str

    async def generate(
        self, request: GenerateRequest, on_chunk: ModelChunkSink | None = None
    ) -> GenerateResponse: ...


_PROVIDERS: dict[str, Callable[[str], Model]] = {}
_MODELS: dict[str, Model | Callable[[], Model]] = {}
# prefix -> (module, factory function), imported when a name first needs it
_BUILTIN: dict[str, tuple[str, str]] = {
    "openai": ("nb_agents.models.openai_compat", "openai_model"),
    "ollama": ("nb_agents.models.openai_compat", "ollama_model"),
    "googleai": ("nb_agents.models.gemini", "GeminiModel"),
    "anthropic": ("nb_agents.models.anthropic", "AnthropicModel"),
}


def register_provider(prefix: str, factory: Callable[[str], Model]) -> None:
    """Make ``prefix/<model>`` names resolve through `factory(model_name)`.

    A registered prefix takes precedence over a built-in one of the same name.

    Example:
        >>> from nb_agents.testing import FunctionModel
        >>> register_provider("echo", lambda name: FunctionModel(lambda r: r.messages[-1].text, name=name))
        >>> resolve_model("echo/loud").name
        'loud'
    """
    _PROVIDERS[prefix] = factory


def register_model(name: str, model: Model | Callable[[], Model]) -> None:
    """Make the exact `name` resolve to `model`, or to what ``model()`` returns.

    Registering a name again replaces it (re-running a notebook cell is fine).
    A factory is called on every resolve, so each agent gets its own object.

    Args:
        name: Any non-empty name, e.g. ``"my-llm"`` or ``"acme/chat-large"``.
        model: A `Model`, or a callable without arguments that builds one.

    Example:
        >>> from nb_agents.testing import ScriptedModel
        >>> register_model("house-model", ScriptedModel([], name="house-model"))
        >>> resolve_model("house-model").name
        'house-model'
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_model needs a non-empty name, got {name!r}")
    if not isinstance(model, Model) and not callable(model):
        raise TypeError(
            f"register_model('{name}', ...) needs a model object (with name and async generate) "
            f"or a factory function, got {type(model).__name__}"
        )
    _MODELS[name] = model


def resolve_model(spec: str | Model) -> Model:
    """The model object for a name like ``"openai/gpt-4o-mini"``, or the model itself."""
    if not isinstance(spec, str):
        return spec
    registered = _MODELS.get(spec)
    if registered is not None:
        return registered if isinstance(registered, Model) else registered()
    prefix, sep, rest = spec.partition("/")
    if sep and rest:
        factory = _PROVIDERS.get(prefix)
        if factory is None and prefix in _BUILTIN:
            module, attr = _BUILTIN[prefix]
            factory = getattr(importlib.import_module(module), attr)
        if factory is not None:
            return factory(rest)
    known = ", ".join(sorted({*_PROVIDERS, *_BUILTIN}))
    raise NotFoundError(
        f"Unknown model '{spec}': no provider for '{prefix}' (known providers: {known}). "
        "Use 'provider/model', register one with nba.register_model(name, model), "
        "or pass a model object, e.g. nb_agents.testing.ScriptedModel([...])."
    )
