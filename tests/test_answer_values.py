"""An answer that is not JSON is refused by ``chat.resume`` before anything runs or is stored.

``NaN``, ``Infinity``, an integer beyond a double or a NUL character in an answer
given in-process is refused with ``InvalidArgumentError`` naming the field, by the
check every input of a turn goes through (`nb_agents._json.check_value`). Before,
``NaN`` reached the tool and was written into the audit trail as a ``NaN`` token
no JSON parser reads. On every store.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from helpers import text_response, tool_call_response

import nb_agents as nba
from nb_agents.errors import InvalidArgumentError
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


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
