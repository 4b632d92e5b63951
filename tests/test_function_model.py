"""`FunctionModel` streams its reply word by word, as a real model does; the reply shapes a turn reads."""

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


async def test_a_reply_in_the_legacy_candidates_shape_is_read_from_its_first_candidate() -> None:
    legacy = {
        "candidates": [
            {"message": {"role": "model", "content": [{"text": "cut short"}]}, "finishReason": "length"},
            {"message": {"role": "model", "content": [{"text": "not this one"}]}, "finishReason": "stop"},
        ]
    }
    res = await nba.define_agent("a", model=FunctionModel(lambda req: legacy)).chat().send("x")
    assert (res.text, res.finish_reason) == ("cut short", "length")


async def test_a_reply_that_names_no_finish_reason_ends_the_turn_as_unknown() -> None:
    bare = {"message": {"role": "model", "content": [{"text": "hi"}]}}
    res = await nba.define_agent("a", model=FunctionModel(lambda req: bare)).chat().send("x")
    assert (res.text, res.finish_reason) == ("hi", "unknown")


async def test_a_reply_with_neither_a_message_nor_candidates_fails_the_turn_naming_the_model() -> None:
    chat = nba.define_agent("a", model=FunctionModel(lambda req: {"finishReason": "stop"}, name="m1")).chat()
    with pytest.raises(nba.AgentError, match="model 'm1' returned no message"):
        await chat.send("x")
