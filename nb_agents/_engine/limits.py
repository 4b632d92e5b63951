"""What a call may carry: refused before any store access or tool, so a final write never fails on it.

Every value an invocation stores comes from its input and init. A value that
would pass validation and then fail where it is written (a JSON encoder's depth,
a UTF-8 encoder, a database index) is refused up front with ``INVALID_ARGUMENT``
naming the limit:

* JSON nested deeper than `MAX_JSON_DEPTH` levels anywhere (a message, a tool
  input, a resume answer, a state blob);
* a lone surrogate (U+D800 to U+DFFF) in any string: it has no UTF-8 encoding;
* an id (snapshot or session) longer than `MAX_ID_LENGTH` characters, or holding
  a control character, a surrogate or nothing at all.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from ..errors import InvalidArgumentError
from ..types import AgentInit, AgentInput

__all__ = ["MAX_ID_LENGTH", "MAX_JSON_DEPTH", "check_id", "check_init_ids", "check_input", "check_json"]

MAX_JSON_DEPTH = 64
"""The deepest nesting of JSON objects and arrays a call may carry."""

MAX_ID_LENGTH = 256
"""The longest snapshot or session id, in characters."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_BAD_ID = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _bad_text(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def check_id(value: str | None, what: str) -> None:
    """Refuse an id that no store can index or encode."""
    if value is None:
        return
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{what} must be a non-empty string")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidArgumentError(
            f"{what} is {len(value)} characters long; ids are at most {MAX_ID_LENGTH} characters"
        )
    found = _BAD_ID.search(value)
    if found is not None:
        raise InvalidArgumentError(
            f"{what} holds the character U+{ord(found.group()):04X} at position {found.start()}; "
            "ids may not hold control characters or lone surrogates"
        )


def check_json(value: Any, where: str) -> None:
    """Refuse JSON nested deeper than `MAX_JSON_DEPTH`, or holding a lone surrogate."""
    # an explicit stack, not recursion: a hostile value must not exhaust the Python stack
    stack: list[tuple[Any, int, str]] = [(value, 0, where)]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, str):
            if _bad_text(node):
                raise InvalidArgumentError(
                    f"{path} holds a lone surrogate (U+D800 to U+DFFF), which has no UTF-8 encoding; "
                    "send valid Unicode text"
                )
            continue
        if isinstance(node, BaseModel | dict | list | tuple):
            if depth >= MAX_JSON_DEPTH:
                raise InvalidArgumentError(
                    f"{path} is nested more than {MAX_JSON_DEPTH} levels deep; "
                    f"JSON values may nest at most {MAX_JSON_DEPTH} levels"
                )
            if isinstance(node, BaseModel):  # a wire model is a JSON object too
                items: Any = list(node.__dict__.items())
                if node.__pydantic_extra__:
                    items += list(node.__pydantic_extra__.items())
                stack.extend((v, depth + 1, f"{path}.{k}") for k, v in items if v is not None)
            elif isinstance(node, dict):
                for k, v in node.items():
                    if isinstance(k, str) and _bad_text(k):
                        raise InvalidArgumentError(f"{path} has a key holding a lone surrogate")
                    stack.append((v, depth + 1, f"{path}.{k}"))
            else:
                stack.extend((v, depth + 1, f"{path}[{i}]") for i, v in enumerate(node))


def check_init_ids(init: AgentInit) -> None:
    """Refuse an init whose ids a store could not index or encode."""
    check_id(init.snapshot_id, "init.snapshotId")
    check_id(init.session_id, "init.sessionId")
    if init.state is not None:
        check_id(init.state.session_id, "init.state.sessionId")


def check_input(inp: AgentInput) -> None:
    """Refuse an input a store could not write (see the module docstring)."""
    check_json(inp, "data")
