"""The request parser refuses exactly what `nb_agents._json.loads` refuses, with the same message.

`parse_envelope` skips the walk of a body whose text cannot hold a refused value
(`request._SUSPECT`); these bodies sit on each edge of that test.
"""

from __future__ import annotations

import random

import pytest

from nb_agents._json import loads
from nb_agents.errors import InvalidArgumentError, RequestError
from nb_agents.server.request import parse_envelope

EDGES = [
    '{"data": {"x": 1e308}}',
    '{"data": {"x": 1e309}}',
    '{"data": {"x": -1e400}}',
    '{"data": {"x": ' + "1" * 199 + "e99}}",
    '{"data": {"x": ' + "1" * 199 + "e109}}",
    '{"data": {"x": ' + "9" * 309 + "}}",
    '{"data": {"x": ' + "9" * 5000 + "}}",
    '{"data": {"x": NaN}}',
    '{"data": {"x": -Infinity}}',
    '{"data": {"x": "NaN and Infinity in a string"}}',
    '{"data": {"x": "\\u0000"}}',
    '{"data": {"x\\u0000": 1}}',
    '{"data": {"x": "\\ud800"}}',
    '{"data": {"x": "\\uDFFF"}}',
    '{"data": {"x": "\\ud83d\\ude00"}}',
    '{"data": {"x": "\\u00e9 caf\\u00e9"}}',
    '{"data": {"x": "\\\\ud800"}}',
    '{"data": ' + "[" * 62 + "]" * 62 + "}",
    '{"data": ' + "[" * 63 + "]" * 63 + "}",
    '{"data": ' + "[" * 64 + "]" * 64 + "}",
    '{"data": ' + '{"a":' * 70 + "1" + "}" * 70 + "}",
]


def verdict(parse: object, text: str) -> str:
    try:
        parse(text)  # type: ignore[operator]
    except (InvalidArgumentError, RequestError) as exc:
        return exc.message
    return "ok"


def numbers(count: int) -> list[str]:
    """Bodies holding number literals of random size, beyond a double too."""
    rng = random.Random(23)
    out = []
    for _ in range(count):
        mantissa = str(rng.randint(1, 9)) + "".join(
            str(rng.randint(0, 9)) for _ in range(rng.randint(0, 260))
        )
        exponent = f"e{rng.randint(-400, 400)}" if rng.random() < 0.7 else ""
        out.append('{"data": {"v": ' + mantissa + exponent + "}}")
    return out


@pytest.mark.parametrize("text", EDGES + numbers(200))
def test_the_body_check_refuses_what_loads_refuses(text: str) -> None:
    assert verdict(lambda t: parse_envelope(t.encode()), text) == verdict(loads, text)
