"""What a JSON value may hold: one check (`nb_agents._json.check_value`), over HTTP and in-process.

Non-finite numbers (``NaN``, ``Infinity``, ``1e400``), integers beyond a double,
NUL characters, lone surrogates and nesting past 64 levels are refused with
``INVALID_ARGUMENT`` naming the field (`tests/test_answer_values.py`: the same
check on answers given in-process; `tests/edges/test_hostile_bytes.py`: over HTTP).
"""

from __future__ import annotations

import enum
import json
import math
import random
from collections import OrderedDict

import pytest

from nb_agents._json import canonical, check_value, loads
from nb_agents.errors import InvalidArgumentError
from nb_agents.types import AgentInput, Part, ToolResponse, ToolResume

REFUSED = [
    ('{"a": NaN}', "a is NaN"),
    ('{"a": [Infinity]}', "a[0] is Infinity"),
    ('{"a": {"b": -Infinity}}', "a.b is -Infinity"),
    ('{"a": 1e400}', "a is Infinity (or beyond 1.8e308)"),
    ('{"a": -1.5e309}', "a is -Infinity (or beyond -1.8e308)"),
    ('{"a": ' + "9" * 5000 + "}", "a is an integer beyond ±1.8e308"),
    ('{"a": -' + "9" * 400 + "}", "a is an integer beyond ±1.8e308"),
    ('{"a": "x\\u0000y"}', "a holds U+0000 (NUL) at position 1"),
    ('{"a\\u0000": 1}', "a key of the value holds U+0000"),
    ('{"a": ["\\udc00"]}', "a[0] holds a lone surrogate (U+DC00) at position 0"),
    ('{"a": ' + "[" * 70 + "]" * 70 + "}", "is nested more than 64 levels deep"),
]


@pytest.mark.parametrize(("text", "says"), REFUSED, ids=[says for _, says in REFUSED])
def test_loads_refuses_what_no_store_keeps_naming_the_field(text: str, says: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        loads(text)
    assert says in err.value.message


def test_loads_takes_every_finite_double_and_unicode() -> None:
    text = '{"max": 1.7976931348623157e308, "int": ' + "9" * 308 + ', "neg": -0.0, "tiny": 5e-324}'
    text = text[:-1] + ', "s": "\\u00e9\\ud83d\\ude00\\u0001", "deep": ' + "[" * 63 + "]" * 63 + "}"
    value = loads(text)
    assert value["max"] == 1.7976931348623157e308 and value["int"] == int("9" * 308)
    assert value["s"] == "é😀\x01" and math.copysign(1, value["neg"]) == -1


def test_a_wire_model_is_named_by_its_json_keys() -> None:
    inp = AgentInput.model_validate(
        {
            "resume": {
                "respond": [{"toolResponse": {"name": "t", "ref": "r", "output": {"amount": float("nan")}}}]
            }
        }
    )
    with pytest.raises(InvalidArgumentError) as err:
        check_value(inp, "data")
    assert err.value.message.startswith("data.resume.respond[0].toolResponse.output.amount is NaN")


def test_a_long_key_is_cut_short_in_the_path() -> None:
    with pytest.raises(InvalidArgumentError) as err:
        check_value({"k" * 5000: math.inf})
    assert len(err.value.message) < 300 and ("k" * 64 + "...") in err.value.message


def _values() -> list[object]:
    """Plain data and wire models around every refused value, every accepted edge and the depth limit."""
    from enum import StrEnum

    class Colour(StrEnum):
        RED = "red"

    refused = [loads_unchecked(text) for text, _ in REFUSED]
    edges: list[object] = [
        None, True, 0, -0.0, 5e-324, 1.7976931348623157e308, int("9" * 308), "é😀\x01", "\ud800", "a\x00",
        Colour.RED, {"k\x00": 1}, {"é": 1}, {1: "x"}, (1, 2), [b"bytes"], math.nan, -math.inf, 10**400,
    ]  # fmt: skip
    for n in (62, 63, 64, 65):
        edges.append(_nested(n))
    out: list[object] = []
    for v in refused + edges:
        out.append(v)
        output = {"amount": v}
        out.append(
            AgentInput.model_construct(
                resume=ToolResume.model_construct(
                    respond=[
                        Part.model_construct(tool_response=ToolResponse(name="t", ref="r", output=output))
                    ]
                )
            )
        )
    return out


def loads_unchecked(text: str) -> object:
    from nb_agents._json import _int

    return json.loads(text, parse_constant=float, parse_int=_int)


def _nested(n: int) -> object:
    value: object = []
    for _ in range(n - 1):
        value = [value]
    return value


@pytest.mark.parametrize("value", _values(), ids=lambda v: repr(v)[:40])
def test_the_quick_walk_passes_only_what_the_full_check_passes(value: object) -> None:
    # check_value walks quickly (no paths kept) and hands what it is not sure of to the full walk
    # (`_check_all`): it must refuse exactly what the full walk refuses, plain or inside a wire
    # model, at any depth
    from nb_agents._json import _check_all

    try:
        _check_all(value, "v")
    except InvalidArgumentError as err:
        with pytest.raises(InvalidArgumentError) as again:
            check_value(value, "v")
        assert again.value.message == err.message
    else:
        check_value(value, "v")


def _spelled_by_value(value: object) -> object:
    """The rule `canonical` keeps, written plainly (the walk before it skipped unchanged values):
    integral doubles below 2**53 as ints, other numbers as doubles, ints beyond any double as written."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        try:
            double = float(value)
        except OverflowError:
            return value
        return int(double) if double.is_integer() and abs(double) < 2**53 else double
    if isinstance(value, dict):
        return {k: _spelled_by_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_spelled_by_value(v) for v in value]
    return value


class _Level(enum.IntEnum):
    HIGH = 3


class _Label(str):
    pass


class _Money(float):
    pass


NUMBERS = [
    0, -0.0, 500, 500.0, -7.0, 0.1, 1e-07, 1e16, 2.5, 2**53 - 1, 2**53, -(2**53), 2**53 + 1, 10**400,
    -(10**400), float("inf"), float("nan"), True, False, None, "500.0", _Level.HIGH, _Label("x"),
    _Money(3.0), _Money(3.5),
]  # fmt: skip


def _nested(rng: random.Random, depth: int) -> object:
    pick = rng.random()
    if depth == 0 or pick < 0.4:
        return rng.choice(NUMBERS)
    size = rng.randrange(4)
    if pick < 0.7:
        return {f"k{n}": _nested(rng, depth - 1) for n in range(size)}
    items = [_nested(rng, depth - 1) for _ in range(size)]
    return tuple(items) if pick < 0.75 else OrderedDict(enumerate(items)) if pick < 0.8 else items


def test_canonical_spells_each_number_by_its_value_and_changes_nothing_else() -> None:
    rng = random.Random(23)
    values = [*NUMBERS, [500.0, {"a": 1.0, "b": [2**53, "x"]}], {"n": {"m": [0.1, -0.0]}}, [], {}]
    values += [_nested(rng, 5) for _ in range(3000)]
    for value in values:
        assert canonical(value) == json.dumps(
            _spelled_by_value(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ), value
    same = {"a": [1, "x", None, {"b": True}]}
    assert canonical(same) == '{"a":[1,"x",null,{"b":true}]}'
    assert canonical({"amount": 500.0}) == canonical({"amount": 500}) == '{"amount":500}'
    assert canonical([1, 2.0, 3]) == "[1,2,3]"
    held = {"a": [1.0, 2], "b": 3.0}
    canonical(held)
    assert held == {"a": [1.0, 2], "b": 3.0} and type(held["b"]) is float  # what it reads is left as it was
