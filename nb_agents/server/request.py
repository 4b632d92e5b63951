"""Reading a request body within bounds, before anything reaches an agent or a store.

Every check here runs on the raw request, in this order, and answers with a clear
error naming what was wrong:

* the body is larger than ``max_body_bytes``: 413, checked against
  ``Content-Length`` and again while reading, so an oversized body is never
  read whole;
* the body is not a JSON object: 400 ``INVALID_ARGUMENT`` with the parser's
  position;
* anywhere in the body, a value that is not JSON every store keeps and every
  client reads (`nb_agents._json.check_value`): ``NaN``, ``Infinity``, a number
  beyond a double (``1e400``, a 5000-digit integer), JSON nested deeper than 64
  levels, a lone surrogate, a NUL character: 400 naming the field, e.g.
  ``data.resume.respond[0].toolResponse.output.amount``;
* a top-level key other than ``data``, ``init`` and ``config``, and a key the
  route does not take inside ``data``, ``data.resume`` or ``init``
  (`check_fields`): 400 naming it. Deeper objects (messages, parts, a state
  blob) keep unknown keys, as Genkit's newer fields must round-trip;
* more than ``max_parts`` parts (the input message's content, the resume
  answers, and the parts of a client-managed state blob, counted together): 400;
* a value that does not validate against the wire model: 400 naming the fields;
* before a stream starts, what no store could write (`check_turn_values`: an
  id no index takes): 400, as in plain mode, where the turn finds the same
  before it touches a store.

What the engine decides once the turn has started (init misuse, a tampered
state blob, ...) is not a request error: see `nb_agents.server.turn`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from .._engine import check_init_ids, check_json
from .._json import MAX_JSON_DEPTH, check_value
from .._json import _int as _json_int
from ..errors import InvalidArgumentError, RequestError
from ..types import AgentInit, AgentInput, ToolResume
from .asgi import header, read_asgi_body

__all__ = [
    "ENVELOPE_KEYS",
    "call_config",
    "check_fields",
    "check_turn_fields",
    "check_turn_values",
    "count_parts",
    "parse_envelope",
    "read_body",
    "validate",
]

M = TypeVar("M", bound=BaseModel)

ENVELOPE_KEYS = ("data", "init", "config")
_SHOWN_ERRORS = 5
# What in a JSON text may stand for a value `check_value` refuses: a NUL or surrogate escape, a NaN
# or Infinity token, a run of 200 digits or an exponent of 3 (a number beyond a double, or infinite).
# A text with none of them, and fewer brackets than the deepest nesting allowed, holds no such
# value: its walk is skipped (it is the costliest part of reading a request). Anything else, a
# false alarm inside a string included, is walked, and refused by `check_value` as before.
_SUSPECT = re.compile(r"\\u(?:0000|[dD][89a-fA-F])|NaN|Infinity|[0-9]{200}|[eE][+-]?[0-9]{3}")


async def read_body(request: Request, limit: int, timeout: float) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed `limit` bytes,
    and with 408 when it has not all arrived `timeout` seconds after reading began
    (`nb_agents.server.asgi.read_asgi_body`, which the lean turn route calls itself)."""
    return await read_asgi_body(header(request.scope, b"content-length"), request.receive, limit, timeout)


def parse_envelope(
    raw: bytes, *, required: Iterable[str] = ("data",), keys: Iterable[str] = ENVELOPE_KEYS
) -> dict[str, Any]:
    """Parse ``{"data": ..., "init": ..., "config": ...}``; a top-level key not in `keys` is an error."""
    if not raw.strip():
        raise RequestError('the request body is empty; send a JSON object like {"data": {...}, "init": {}}')
    try:
        text = raw.decode("utf-8")  # RFC 8259: JSON on the wire is UTF-8
        body = json.loads(text, parse_constant=float, parse_int=_json_int)  # as nb_agents._json.loads
        if text.count("{") + text.count("[") >= MAX_JSON_DEPTH or _SUSPECT.search(text) is not None:
            check_value(body)
    except InvalidArgumentError as exc:
        raise RequestError(exc.message) from None
    except UnicodeDecodeError:
        raise RequestError("the request body is not UTF-8 encoded JSON") from None
    except json.JSONDecodeError as exc:
        raise RequestError(
            f"the request body is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise RequestError("the request body is not valid JSON: it is nested too deeply") from None
    if not isinstance(body, dict):
        raise RequestError(f"the request body must be a JSON object, got {_json_kind(body)}")
    known = tuple(keys)
    unknown = sorted(k for k in body if k not in known)
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        fields = ", ".join(repr(k) for k in known)
        raise RequestError(f"unknown top-level field(s) {names}; this request body takes only {fields}")
    missing = [k for k in required if k not in body]
    if missing:
        raise RequestError(f"the request body has no {missing[0]!r} field")
    return body


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def _items(value: Any, *keys: str) -> list[Any]:
    """``value[k1][k2]...`` when every step is a dict and the end is a list, else ``[]``."""
    for key in keys:
        if not isinstance(value, dict):
            return []
        value = value.get(key)
    return value if isinstance(value, list) else []


def _field_names(model: type[BaseModel]) -> frozenset[str]:
    """The JSON keys a wire model takes: its camelCase aliases and its snake_case names."""
    return frozenset(n for name, f in model.model_fields.items() for n in (name, f.alias or name))


_TURN_FIELDS = (
    ("data", _field_names(AgentInput)),
    ("data.resume", _field_names(ToolResume)),
    ("init", _field_names(AgentInit)),
)


def check_fields(value: Any, allowed: Collection[str], where: str) -> None:
    """Refuse a key of the object `value` that is not in `allowed` (a misspelled answer is not ignored)."""
    if not isinstance(value, dict):
        return  # not an object: validation says so
    unknown = sorted(k for k in value if k not in allowed)
    if unknown:
        names = ", ".join(f"{where}.{k if len(k) <= 64 else k[:64] + '...'}" for k in unknown[:_SHOWN_ERRORS])
        accepted = ", ".join(sorted(k for k in allowed if "_" not in k))  # snake_case twins unnamed
        raise RequestError(f"unknown field(s) {names}; {where} takes only {accepted}")


def check_turn_fields(body: dict[str, Any]) -> None:
    """`check_fields` on a turn's ``data``, ``data.resume`` and ``init``."""
    for where, allowed in _TURN_FIELDS:
        value: Any = body
        for step in where.split("."):
            value = value.get(step) if isinstance(value, dict) else None
        check_fields(value, allowed, where)


def count_parts(body: dict[str, Any]) -> int:
    """How many parts the request carries: the input's and its state blob's together."""
    data, init = body.get("data"), body.get("init")
    count = len(_items(data, "message", "content"))
    count += len(_items(data, "resume", "respond")) + len(_items(data, "resume", "restart"))
    for message in _items(init, "state", "messages"):
        count += len(_items(message, "content"))
    for artifact in _items(init, "state", "artifacts"):
        count += len(_items(artifact, "parts"))
    return count


def validate(model: type[M], value: Any, where: str) -> M:
    """`value` as a `model`; a validation error becomes a 400 naming the fields."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problems = [f"{_location(where, e['loc'])}: {e['msg']}" for e in exc.errors()[:_SHOWN_ERRORS]]
        more = exc.error_count() - len(problems)
        if more > 0:
            problems.append(f"... and {more} more")
        raise RequestError(f"invalid {where} ({model.__name__}): " + "; ".join(problems)) from None


def _location(where: str, loc: tuple[int | str, ...]) -> str:
    out = where
    for step in loc:
        out += f"[{step}]" if isinstance(step, int) else f".{step}"
    return out


def call_config(body: dict[str, Any], allowed: frozenset[str] | None) -> dict[str, Any] | None:
    """The request's ``config`` (per-call model settings), checked against the keys allowed.

    `allowed` None takes any key; an empty set refuses every ``config``.
    """
    config = body.get("config")
    if config is None:
        return None
    if not isinstance(config, dict):
        raise RequestError(f"'config' must be a JSON object of model settings, got {_json_kind(config)}")
    if allowed is not None:
        refused = sorted(k for k in config if k not in allowed)
        if refused:
            names = ", ".join(repr(k) for k in refused[:_SHOWN_ERRORS])
            accepted = ", ".join(sorted(allowed)) or "none"
            raise RequestError(
                f"'config' sets {names}, which this server does not let clients set "
                f"(accepted: {accepted}; create_app(call_config_keys=...))"
            )
    return config


def check_turn_values(inp: AgentInput, init: AgentInit, *, store_backed: bool) -> None:
    """Refuse, as a 400, an input or init holding what no store could write.

    The checks a turn makes before it touches a store that reading the body
    has not made (the values themselves, nesting and text, were checked in the
    whole body by `parse_envelope`): the ids, made here so that a stream, whose
    200 goes out at once, answers them with the HTTP status plain mode gives.
    A state blob is checked for an agent without a store; one with a store
    refuses any state unread.
    """
    try:
        check_init_ids(init)
        if init.state is not None and not store_backed:
            check_json(init.state, "init.state")
    except InvalidArgumentError as exc:
        raise RequestError(exc.message) from None
