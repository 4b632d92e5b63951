"""Provider-neutral pieces of converting Genkit requests and answers.

Each provider module maps Genkit messages onto its own API; what they all
need is here: the generation config split into the common keys (Genkit's
``temperature``, ``maxOutputTokens``, ``topP``, ``topK``, ``stopSequences``,
``version``, plus their snake_case spellings) and the rest, which is passed
through untouched; tool arguments to and from JSON text (invalid JSON is kept
as the raw string, so the tool's input check tells the model what was wrong
instead of the turn crashing); tool outputs as text; ``data:`` URLs; refs for
calls that arrived without one; the finished response.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..types import GenerateResponse, Message, Part

__all__ = [
    "GenerationConfig",
    "RefCounter",
    "add_turn",
    "arguments_text",
    "mint_ref",
    "build_response",
    "data_url",
    "output_text",
    "parse_arguments",
    "split_config",
    "system_text",
    "tool_schema",
]

_ALIASES: dict[str, str] = {
    "temperature": "temperature",
    "maxOutputTokens": "max_output_tokens",
    "max_output_tokens": "max_output_tokens",
    "maxTokens": "max_output_tokens",
    "max_tokens": "max_output_tokens",
    "topP": "top_p",
    "top_p": "top_p",
    "topK": "top_k",
    "top_k": "top_k",
    "stopSequences": "stop_sequences",
    "stop_sequences": "stop_sequences",
    "stop": "stop_sequences",
    "version": "version",
}


@dataclass
class GenerationConfig:
    """The common generation settings, and everything else to pass through.

    Example:
        >>> cfg = split_config({"temperature": 0.2}, {"maxOutputTokens": 50, "seed": 7})
        >>> (cfg.temperature, cfg.max_output_tokens, cfg.extra)
        (0.2, 50, {'seed': 7})
    """

    temperature: float | None = None
    max_output_tokens: int | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: list[str] | None = None
    version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def settings(self, names: Mapping[str, str]) -> dict[str, Any]:
        """The common settings that are set, under a provider's keys (`names`: field -> key).

        Example:
            >>> GenerationConfig(temperature=0.2).settings({"temperature": "temperature", "top_p": "topP"})
            {'temperature': 0.2}
        """
        return {key: value for name, key in names.items() if (value := getattr(self, name)) is not None}

    def passed(self, *taken: str) -> dict[str, Any]:
        """The other settings, as given, but for the keys the provider sets itself (`taken`)."""
        return {key: value for key, value in self.extra.items() if key not in taken}


def _as_dict(config: Any) -> dict[str, Any]:
    if config is None:
        return {}
    if isinstance(config, BaseModel):
        return config.model_dump(by_alias=True, exclude_none=True)
    if isinstance(config, Mapping):
        return dict(config)
    raise TypeError(f"model config must be a dict or a pydantic model, got {type(config).__name__}")


def split_config(*configs: Any) -> GenerationConfig:
    """Merge configs (later ones win per key) and split off the common keys."""
    out = GenerationConfig()
    for config in configs:
        for key, value in _as_dict(config).items():
            if value is None:
                continue
            target = _ALIASES.get(key)
            if target is None:
                out.extra[key] = value
            elif target == "stop_sequences":
                out.stop_sequences = [value] if isinstance(value, str) else list(value)
            else:
                setattr(out, target, value)
    return out


def add_turn(out: list[dict[str, Any]], role: str, key: str, content: list[dict[str, Any]]) -> None:
    """Append a message of `role` holding `content` under `key` (none if it is empty), merged
    into the last one when that has the same role: APIs whose roles alternate want it so."""
    if not content:
        return
    if out and out[-1]["role"] == role:
        out[-1][key].extend(content)
    else:
        out.append({"role": role, key: content})


def system_text(messages: Iterable[Message]) -> str | None:
    """The text of every system message, joined by blank lines."""
    texts = [m.text for m in messages if m.role == "system" and m.text]
    return "\n\n".join(texts) if texts else None


def tool_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """A tool's input schema as an object schema (an empty one if it has none)."""
    if not schema:
        return {"type": "object", "properties": {}}
    return schema


def parse_arguments(raw: str | None) -> Any:
    """Tool-call arguments from JSON text; the raw text itself if it is not JSON."""
    if raw is None or not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def arguments_text(value: Any) -> str:
    """Tool-call arguments as JSON text (raw text that is not JSON goes back as it came)."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except json.JSONDecodeError:
            return value
    return json.dumps({} if value is None else value, ensure_ascii=False, separators=(",", ":"))


def output_text(value: Any) -> str:
    """A tool's output as the text a chat API expects (strings stay as they are)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a ``data:<type>;base64,<data>`` URL, else None."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head.removesuffix(";base64") or "application/octet-stream", data


def mint_ref(name: str) -> str:
    """A ref for a tool call that came without an id: ``<name>-<12 hex digits>``, never repeated.

    Refs must be unique within a session: resume validation binds an answer to
    the paused call by (name, ref), so a ref that repeats from turn to turn (as
    ``<name>-0`` did) would let an old answer resume a new question.
    """
    return f"{name}-{uuid.uuid4().hex[:12]}"


class RefCounter:
    """Deterministic refs for history whose tool calls have none: ``<name>-<n>`` per name.

    Used when sending history (from another model, or written by hand) that
    lacks refs to an API that needs ids: the n-th call of a name in a message
    gets the same ref as the n-th response of that name in the tool message
    after it. Calls a model answers without an id get `mint_ref` instead.

    Example:
        >>> refs = RefCounter()
        >>> [refs.ref("getBalance", None), refs.ref("getBalance", None), refs.ref("x", "call_1")]
        ['getBalance-0', 'getBalance-1', 'call_1']
    """

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def ref(self, name: str, ref: str | None) -> str:
        if ref:
            return ref
        n = self._seen.get(name, 0)
        self._seen[name] = n + 1
        return f"{name}-{n}"


def build_response(
    parts: list[Part],
    finish_reason: str,
    *,
    usage: dict[str, Any] | None = None,
    finish_message: str | None = None,
    custom: Any = None,
) -> GenerateResponse:
    """The Genkit response for a finished model message."""
    response = GenerateResponse(message=Message(role="model", content=parts), finish_reason=finish_reason)
    if usage:
        response.usage = {k: v for k, v in usage.items() if v is not None}
    if finish_message:
        response.finish_message = finish_message
    if custom is not None:
        response.custom = custom
    return response
