"""JSON values: what one may hold, plain data from pydantic models, and a canonical text.

`check_value` is the one definition of a JSON value nb_agents accepts from a
caller, over HTTP (`loads`, the request parser) and in-process (every input a
turn takes, answers included), refused with ``INVALID_ARGUMENT`` naming the
field (``data.resume.respond[0].toolResponse.output.amount``):

* a number that is not a finite double: ``NaN``, ``Infinity``, ``-Infinity``,
  ``1e400`` (which reads as infinity), an integer beyond about ``1.8e308``.
  JSON has no such values (RFC 8259) and JavaScript, Genkit's client, cannot
  read them; Python's ``json`` writes ``NaN`` tokens that no other parser takes;
* JSON nested deeper than `MAX_JSON_DEPTH` levels;
* a lone surrogate (U+D800 to U+DFFF): it has no UTF-8 encoding;
* the character U+0000 (NUL) in any string or key: PostgreSQL cannot store it
  (jsonb and text refuse it), so no store takes it, and a session written on
  one store can move to another.

Answers, pause data and signed state are compared and hashed as JSON;
`canonical` and `to_json_value` are the one definition of "the same JSON value"
the package uses.

Numbers are the same when they are the same number, as JSON's clients read them:
JavaScript (Genkit's JS client, a browser) has one number type, so the ``500.0`` of a
model's tool call comes back from it as ``500``, ``-0.0`` as ``0`` and ``1e16`` as
``10000000000000000``. `canonical` writes every number as the double it denotes.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from .errors import InvalidArgumentError

__all__ = ["MAX_JSON_DEPTH", "canonical", "canonical_typed", "check_value", "loads", "to_json_value"]

MAX_JSON_DEPTH = 64
"""The deepest nesting of JSON objects and arrays a call may carry."""

_MAX_DOUBLE = sys.float_info.max
_MAX_INT_CHARS = len(str(int(_MAX_DOUBLE))) + 1  # digits and a sign: anything longer is beyond a double
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")
_SHOWN_KEY = 64  # a key longer than this is cut short in the path an error names


def loads(text: str) -> Any:
    """Parse JSON text and `check_value` it: what a request body may hold.

    ``NaN``, ``Infinity`` and numbers beyond a double parse (to a non-finite
    float, without the cost of converting thousands of digits) only to be
    refused by the check, with the field they stand in.

    Raises:
        json.JSONDecodeError: the text is not JSON.
        RecursionError: it nests deeper than the parser can follow.
        InvalidArgumentError: it is JSON, but a value nb_agents does not accept.

    Example:
        >>> loads('{"amount": 500}')
        {'amount': 500}
        >>> loads('{"amount": NaN}')
        Traceback (most recent call last):
        ...
        nb_agents.errors.InvalidArgumentError: INVALID_ARGUMENT: amount is NaN; JSON numbers must be finite
    """
    value = json.loads(text, parse_constant=float, parse_int=_int)
    check_value(value)
    return value


class _HugeInteger(float):
    """An integer literal longer than any double, parsed unread (as its sign's infinity) to be refused."""


def _int(text: str) -> int | float:
    if len(text) > _MAX_INT_CHARS:  # int() of thousands of digits is slow, and refused beyond 4300
        return _HugeInteger("-inf" if text.startswith("-") else "inf")
    return int(text)


def check_value(value: Any, where: str = "") -> None:
    """Refuse a value that is not JSON any store keeps and any client reads (see the module docstring).

    `value` is plain JSON data or pydantic models holding it; `where` names it
    in the error (``"data"``), and the error names the field below it.

    Example:
        >>> check_value({"amount": float("nan")}, "o")
        Traceback (most recent call last):
        ...
        nb_agents.errors.InvalidArgumentError: INVALID_ARGUMENT: o.amount is NaN; JSON numbers must be finite
    """
    # the walk of the common case: no paths kept, only the exact JSON types known. Whatever it is
    # not sure of (a refused value, a str subclass or an ``Enum``, text beyond ASCII that may be
    # fine) goes to the full walk (`_check_all`), which names what is wrong, if anything is
    stack: list[tuple[Iterable[Any], int]] = [((value,), 0)]
    while stack:
        children, depth = stack.pop()
        for v in children:
            t = type(v)
            if t is str:
                if "\x00" in v or (not v.isascii() and _BAD_TEXT.search(v) is not None):
                    return _check_all(value, where)
            elif t is int or t is float:
                if not -_MAX_DOUBLE <= v <= _MAX_DOUBLE:  # NaN fails both comparisons
                    return _check_all(value, where)
            elif v is None or t is bool:
                continue
            elif depth >= MAX_JSON_DEPTH:
                return _check_all(value, where)
            elif t is dict:
                for k in v:  # a loop, not all(...): it runs for every object of every input
                    if type(k) is not str or not k.isascii() or "\x00" in k:
                        return _check_all(value, where)
                stack.append((v.values(), depth + 1))
            elif t is list or t is tuple:
                stack.append((v, depth + 1))
            elif isinstance(v, BaseModel):
                stack.append((v.__dict__.values(), depth + 1))
                if v.__pydantic_extra__:
                    stack.append((v.__pydantic_extra__.values(), depth + 1))
            else:
                return _check_all(value, where)


def _check_all(value: Any, where: str) -> None:
    """`check_value`'s full walk: raises naming the field that is wrong (if one is)."""
    # an explicit stack, not recursion: a hostile value must not exhaust the Python stack. A
    # node's path is its parent's and its own key or index (`_path` spells it, for an error)
    stack: list[tuple[Any, int, Any]] = [(value, 0, where)]
    while stack:
        node, depth, at = stack.pop()
        if isinstance(node, str):
            if not node.isascii() or "\x00" in node:
                _check_text(node, _path(at) or "the value")
        elif isinstance(node, float):
            if not -_MAX_DOUBLE <= node <= _MAX_DOUBLE:  # NaN fails both comparisons
                _refuse_number(node, _path(at), integer=isinstance(node, _HugeInteger))
        elif isinstance(node, int):
            if not isinstance(node, bool) and not -_MAX_DOUBLE <= node <= _MAX_DOUBLE:
                _refuse_number(float("inf") if node > 0 else float("-inf"), _path(at), integer=True)
        elif isinstance(node, BaseModel | dict | list | tuple):
            if depth >= MAX_JSON_DEPTH:
                raise InvalidArgumentError(
                    f"{_path(at) or 'the value'} is nested more than {MAX_JSON_DEPTH} levels deep; "
                    f"JSON values may nest at most {MAX_JSON_DEPTH} levels"
                )
            if isinstance(node, BaseModel):  # a wire model is a JSON object too, named by its JSON keys
                fields = type(node).model_fields
                items: Any = [(fields[k].alias or k if k in fields else k, v) for k, v in vars(node).items()]
                if node.__pydantic_extra__:
                    items += list(node.__pydantic_extra__.items())
                stack.extend((v, depth + 1, (at, k)) for k, v in items if v is not None)
            elif isinstance(node, dict):
                for k, v in node.items():
                    if isinstance(k, str) and (not k.isascii() or "\x00" in k):
                        _check_text(k, f"a key of {_path(at) or 'the value'}")
                    stack.append((v, depth + 1, (at, k)))
            else:
                stack.extend((v, depth + 1, (at, [i])) for i, v in enumerate(node))


def _path(at: Any) -> str:
    """The path that a node's ``(parent, key)`` links spell: ``data.resume.respond[0].output``."""
    keys: list[Any] = []
    while isinstance(at, tuple):
        at, key = at
        keys.append(key)
    path: str = at
    for key in reversed(keys):
        if isinstance(key, list):  # an index
            path = f"{path}[{key[0]}]"
            continue
        step = str(key)
        if len(step) > _SHOWN_KEY:
            step = step[:_SHOWN_KEY] + "..."
        path = f"{path}.{step}" if path else step
    return path


def _check_text(text: str, what: str) -> None:
    found = _BAD_TEXT.search(text)
    if found is None:
        return
    char, at = ord(found.group()), found.start()
    if char == 0:
        raise InvalidArgumentError(
            f"{what} holds U+0000 (NUL) at position {at}, which no store can keep "
            "(PostgreSQL refuses it); send text without NUL characters"
        )
    raise InvalidArgumentError(
        f"{what} holds a lone surrogate (U+{char:04X}) at position {at}, which has no UTF-8 encoding; "
        "send valid Unicode text"
    )


def _refuse_number(number: float, path: str, *, integer: bool = False) -> None:
    what = path or "the value"
    if number != number:
        raise InvalidArgumentError(f"{what} is NaN; JSON numbers must be finite")
    sign = "" if number > 0 else "-"
    shown = "an integer beyond ±1.8e308" if integer else f"{sign}Infinity (or beyond {sign}1.8e308)"
    raise InvalidArgumentError(f"{what} is {shown}, more than a double holds; JSON numbers must be finite")


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


def _same_numbers(value: Any) -> Any:
    """`value` with one spelling per double: integral numbers below 2**53 as ints, the rest as floats.

    What holds nothing to respell comes back as itself (no container is rebuilt:
    most values have no float in them); a container is copied from its first
    respelled member on.
    """
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return value
    if kind is int:
        return value if -_EXACT < value < _EXACT else _one_double(value)
    if kind is dict:
        out = None
        for key, item in value.items():
            same = _same_numbers(item)
            if same is not item:
                if out is None:
                    out = dict(value)
                out[key] = same
        return value if out is None else out
    if kind is list:
        for n, item in enumerate(value):
            same = _same_numbers(item)
            if same is not item:
                return [*value[:n], same, *(_same_numbers(v) for v in value[n + 1 :])]
        return value
    if kind is float:
        return _one_double(value)
    return _same_numbers_of(value)  # a subclass, a tuple, or anything else


def _one_double(number: int | float) -> Any:
    try:
        as_double = float(number)
    except OverflowError:  # an int beyond any double: compared as written
        return number
    if as_double.is_integer() and abs(as_double) < _EXACT:
        return int(as_double)  # 500.0 -> 500, -0.0 -> 0
    return as_double  # 0.1, 1e-07, 1e+16 (an int of 2**53 or more rounds as JavaScript rounds it)


def _same_numbers_of(value: Any) -> Any:
    """`_same_numbers` of what is not exactly a JSON type (a bool, str, int or float subclass, a
    tuple, a mapping or list subclass): by `isinstance`, as JSON encodes them."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return _one_double(value)
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
    return _CANONICAL.encode(_same_numbers(value))


# one encoder, not one built by every `json.dumps` call with these options
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_typed(value: Any) -> str:
    """`canonical` as it was before numbers compared by value (``500.0`` and ``500`` differ).

    Only to check state signed by an earlier version (see `StateSigner.verify`).
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
