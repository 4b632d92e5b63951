"""What a JSON value may hold: one check (`nb_agents._json.check_value`), over HTTP and in-process.

Non-finite numbers (``NaN``, ``Infinity``, ``1e400``), integers beyond a double,
NUL characters, lone surrogates and nesting past 64 levels are refused with
``INVALID_ARGUMENT`` naming the field (`tests/test_answer_values.py`: the same
check on answers given in-process; `tests/edges/test_hostile_bytes.py`: over HTTP).
"""

from __future__ import annotations

import math

import pytest

from nb_agents._json import check_value, loads
from nb_agents.errors import InvalidArgumentError
from nb_agents.types import AgentInput

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
