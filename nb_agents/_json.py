"""JSON values: plain data from pydantic models, and a canonical text for comparing and hashing.

Answers, pause data and signed state are compared and hashed as JSON; these two
functions are the one definition of "the same JSON value" the package uses.

Numbers are the same when they are the same number, as JSON's clients read them:
JavaScript (Genkit's JS client, a browser) has one number type, so the ``500.0`` of a
model's tool call comes back from it as ``500``, ``-0.0`` as ``0`` and ``1e16`` as
``10000000000000000``. `canonical` writes every number as the double it denotes.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

__all__ = ["canonical", "canonical_typed", "to_json_value"]


def to_json_value(value: Any) -> Any:
    """Turn a pydantic model (or a structure holding some) into plain JSON data.

    Example:
        >>> to_json_value({"a": [1, (2, 3)]})
        {'a': [1, [2, 3]]}
    """
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, dict):
        return {k: to_json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_value(v) for v in value]
    return value


_EXACT = 2**53  # integers below this are exact as doubles


def _number(value: int | float) -> int | float:
    """One spelling per double: integral values below 2**53 as ints, the rest as floats."""
    try:
        as_double = float(value)
    except OverflowError:  # an int beyond any double: compared as written
        return value
    if as_double.is_integer() and abs(as_double) < _EXACT:
        return int(as_double)  # 500.0 -> 500, -0.0 -> 0
    return as_double  # 0.1, 1e-07, 1e+16 (an int of 2**53 or more rounds as JavaScript rounds it)


def _same_numbers(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, dict):
        return {k: _same_numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_same_numbers(v) for v in value]
    return value


def canonical(value: Any) -> str:
    """Normalized JSON text (sorted keys, no spaces, numbers by value), for comparing and hashing.

    Example:
        >>> canonical({"b": 1, "a": [True, None]})
        '{"a":[true,null],"b":1}'
        >>> canonical({"amount": 500.0}) == canonical({"amount": 500})
        True
    """
    return json.dumps(_same_numbers(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_typed(value: Any) -> str:
    """`canonical` as it was before numbers compared by value (``500.0`` and ``500`` differ).

    Only to check state signed by an earlier version (see `StateSigner.verify`).
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
