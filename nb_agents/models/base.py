"""The model protocol and the registry that resolves ``provider/model`` names.

A model takes a Genkit `GenerateRequest` and returns a `GenerateResponse`,
optionally streaming `ModelResponseChunk` values to a sink as it goes.
Providers register a factory under their prefix (``openai``, ``googleai``,
...); `resolve_model` turns a name into a model object on first use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from ..errors import NotFoundError
from ..types import GenerateRequest, GenerateResponse, ModelResponseChunk

__all__ = ["Model", "ModelChunkSink", "register_provider", "resolve_model"]

ModelChunkSink = Callable[[ModelResponseChunk], Awaitable[None]]


@runtime_checkable
class Model(Protocol):
    """Anything with a name and an async ``generate``."""

    name: str

    async def generate(
        self, request: GenerateRequest, on_chunk: ModelChunkSink | None = None
    ) -> GenerateResponse: ...


_PROVIDERS: dict[str, Callable[[str], Model]] = {}


def register_provider(prefix: str, factory: Callable[[str], Model]) -> None:
    """Make ``prefix/<model>`` names resolve through `factory(model_name)`."""
    _PROVIDERS[prefix] = factory


def resolve_model(spec: str | Model) -> Model:
    """The model object for a name like ``"openai/gpt-4o-mini"`` or a model object."""
    if not isinstance(spec, str):
        return spec
    prefix, sep, rest = spec.partition("/")
    factory = _PROVIDERS.get(prefix) if sep else None
    if factory is None:
        known = ", ".join(sorted(_PROVIDERS)) or "none registered"
        raise NotFoundError(
            f"Unknown model '{spec}': no provider for '{prefix}' (known providers: {known}). "
            "Pass a model object, e.g. nb_agents.testing.ScriptedModel([...])."
        )
    return factory(rest)
