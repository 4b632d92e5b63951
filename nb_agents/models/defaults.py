"""Which model a demo or notebook should use: a real one if a key is set.

`choose_model` looks at the environment once: ``NB_AGENTS_MODEL`` names any
model (``"anthropic/claude-sonnet-4-5"``, ``"ollama/llama3.2"``, a name given
to `register_model`); otherwise the first key found among
``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY`` and ``GEMINI_API_KEY`` /
``GOOGLE_API_KEY`` picks that provider's default model; with none, the
offline fallback you pass is used. The result says which, in one line, so a
demo can print it and nobody mistakes a scripted answer for a real model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from ._provider import HttpModel
from .base import Model, resolve_model
from .http import env_value

__all__ = ["DEFAULT_MODELS", "MODEL_ENV", "ModelChoice", "choose_model"]

MODEL_ENV = "NB_AGENTS_MODEL"

DEFAULT_MODELS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("OPENAI_API_KEY",), "openai/gpt-4o-mini"),
    (("ANTHROPIC_API_KEY",), "anthropic/claude-haiku-4-5"),
    (("GEMINI_API_KEY", "GOOGLE_API_KEY"), "googleai/gemini-flash-latest"),
)
"""(key variables, default model) in the order they are tried."""

_KEYS = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "googleai": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}


class ModelChoice(NamedTuple):
    """The chosen model, a one-line description, and whether it is a real model.

    Unpacks as ``model, description, real = choose_model(offline)``.
    """

    model: Model
    description: str
    real: bool


def choose_model(fallback: Model, *, env: Mapping[str, str] | None = None) -> ModelChoice:
    """A real model if the environment names one or holds a key, else `fallback`.

    Args:
        fallback: The offline model to use without a key (a `ScriptedModel`
            or `FunctionModel` that plays the demo).
        env: The variables to look at (default: ``os.environ``).

    Returns:
        The model, a description like ``"model: openai/gpt-4o-mini
        (OPENAI_API_KEY is set)"`` or ``"model: offline scripted demo model
        (no API key set)"``, and whether it is real.

    Example:
        >>> from nb_agents.testing import FunctionModel
        >>> offline = FunctionModel(lambda r: "hi", name="offline-demo")
        >>> choose_model(offline, env={}).description
        'model: offline scripted demo model (no API key set)'
        >>> choose_model(offline, env={"ANTHROPIC_API_KEY": "sk-..."}).description
        'model: anthropic/claude-haiku-4-5 (ANTHROPIC_API_KEY is set)'
    """
    named = env_value(MODEL_ENV, env=env)
    if named is not None:
        name = named[1]
        note = f"set by {MODEL_ENV}"
        keys = _KEYS.get(name.partition("/")[0])
        found = env_value(*keys, env=env) if keys else None
        if keys and found is None:
            note += f"; {' or '.join(keys)} is not set, so calls will fail until it is"
        return ModelChoice(_model(name, found, env), f"model: {name} ({note})", True)
    for keys, name in DEFAULT_MODELS:
        found = env_value(*keys, env=env)
        if found is not None:
            return ModelChoice(_model(name, found, env), f"model: {name} ({found[0]} is set)", True)
    return ModelChoice(fallback, "model: offline scripted demo model (no API key set)", False)


def _model(name: str, key: tuple[str, str] | None, env: Mapping[str, str] | None) -> Model:
    model = resolve_model(name)
    if (
        env is not None
        and key is not None
        and isinstance(model, HttpModel)
        and model.explicit_api_key is None
    ):
        # keys from an explicit mapping are not in os.environ, where the model would look
        model.explicit_api_key = key[1]
    return model
