"""JSON values: plain data from pydantic models, and a canonical text for comparing and hashing.

Answers, pause data and signed state are compared and hashed as JSON; these two
functions are the one definition of "the same JSON value" the package uses.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

__all__ = ["canonical", "to_json_value"]


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


def canonical(value: Any) -> str:
    """Normalized JSON text (sorted keys, no spaces), for comparing and hashing values.

    Example:
        >>> canonical({"b": 1, "a": [True, None]})
        '{"a":[true,null],"b":1}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
