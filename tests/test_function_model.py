"""`FunctionModel(stream=True)` streams its reply word by word, as a real model does."""

from __future__ import annotations

import pytest

import nb_agents as nba
from nb_agents.testing import FunctionModel

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("stream", [True, False])
async def test_a_streaming_function_model_sends_its_reply_a_word_at_a_time(stream: bool) -> None:
    model = FunctionModel(lambda req: "Approved: sending **it** now.", stream=stream)
    turn = nba.define_agent("a", model=model).chat().send_stream("go")
    pieces = [c.text async for c in turn if c.model_chunk is not None and c.text]
    res = await turn.response
    assert pieces == (["Approved: ", "sending ", "**it** ", "now."] if stream else [])
    assert res.text == "Approved: sending **it** now."


async def test_a_turn_that_is_not_streamed_gets_the_reply_alone() -> None:
    res = (
        await nba.define_agent("a", model=FunctionModel(lambda req: "hi there", stream=True)).chat().send("x")
    )
    assert res.text == "hi there"
