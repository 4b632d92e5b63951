"""What a JSON value may hold: one check (`nb_agents._json.check_value`), over HTTP and in-process.

Non-finite numbers (``NaN``, ``Infinity``, ``1e400``), integers beyond a double,
NUL characters, lone surrogates and nesting past 64 levels are refused with
``INVALID_ARGUMENT`` naming the field. In-process, an answer holding one is refused
by ``chat.resume`` before anything runs or is stored: before, ``NaN`` reached the
tool and was written into the audit trail as a ``NaN`` token no JSON parser reads.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from helpers import text_response, tool_call_response

import nb_agents as nba
from nb_agents._json import check_value, loads
from nb_agents.errors import InvalidArgumentError
from nb_agents.testing import ScriptedModel
from nb_agents.types import AgentInput

pytestmark = pytest.mark.anyio

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


# -- in-process: an answer given to chat.resume -----------------------------------------------
def approval_agent(store: nba.SessionStore, ran: list[Any]) -> nba.Agent:
    @nba.tool(name="transfer")
    async def transfer(amount: float, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"amount": amount})
        ran.append(ctx.resumed)
        return "ok"

    model = ScriptedModel([tool_call_response(("transfer", "t1", {"amount": 500})), text_response("done")])
    return nba.define_agent("bank", model=model, tools=[transfer], store=store)


BAD_ANSWERS = [
    ({"note": math.nan}, "data.resume.restart[0].metadata.resumed.note is NaN"),
    ({"note": math.inf}, "data.resume.restart[0].metadata.resumed.note is Infinity"),
    ({"note": 10**400}, "data.resume.restart[0].metadata.resumed.note is an integer beyond"),
    ({"note": "a\x00b"}, "data.resume.restart[0].metadata.resumed.note holds U+0000"),
]


@pytest.mark.parametrize(("resumed", "says"), BAD_ANSWERS, ids=["nan", "inf", "huge", "nul"])
async def test_an_answer_that_is_not_json_is_refused_before_anything_runs_or_is_stored(
    store: nba.SessionStore, resumed: dict[str, Any], says: str
) -> None:
    ran: list[Any] = []
    chat = approval_agent(store, ran).chat()
    res = await chat.send("send 500")
    [pause] = res.interrupts
    with pytest.raises(InvalidArgumentError) as err:
        await chat.resume(restart=[pause.restart(resumed=resumed)])
    assert says in err.value.message
    assert ran == [] and await store.audit(res.session_id) == []
    snap = await store.get_latest(res.session_id)
    assert snap is not None and snap.snapshot_id == res.snapshot_id  # nothing written after the pause
    # the same interrupt is still answerable, and what is stored reads back as JSON
    done = await chat.resume(restart=[pause.restart(resumed={"note": 1.5})])
    assert done.text == "done" and ran == [{"note": 1.5}]
    [record] = await store.audit(res.session_id)
    assert json.loads(json.dumps(record.answer, allow_nan=False)) == record.answer
