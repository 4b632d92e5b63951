"""`AgentResponse` and `AgentChunk`: Genkit's client fields, with Genkit's meaning.

Genkit JS (``@genkit-ai/ai`` agent-core) reads ``reasoning`` as every reasoning
part joined, ``media`` and ``data`` as the first such part, ``messages`` as the
chat's history after the turn, and ``assertValid()`` throws for a ``blocked``
turn or one without a message. The same on a local agent's chat, sync and async.
"""

from __future__ import annotations

from typing import Any

import pytest

import nb_agents as nba
from nb_agents.testing import ScriptedModel
from nb_agents.types import Media

pytestmark = pytest.mark.anyio

IMAGE = {"url": "data:image/png;base64,AAAA", "contentType": "image/png"}
REPLY = {
    "message": {
        "role": "model",
        "content": [
            {"reasoning": "The user wants "},
            {"text": "Here is "},
            {"reasoning": "a chart."},
            {"media": IMAGE},
            {"data": {"rows": 3}},
            {"data": {"ignored": True}},
            {"text": "your chart."},
        ],
    },
    "finishReason": "stop",
}
CHUNKS = [
    {"role": "model", "content": [{"reasoning": "thinking"}]},
    {"role": "model", "content": [{"text": "Here is "}, {"media": IMAGE}]},
    {"role": "model", "content": [{"data": {"rows": 3}}, {"text": "your chart."}]},
]


async def send(chat: nba.Chat, text: str, sync: bool) -> nba.AgentResponse:
    return chat.send_sync(text) if sync else await chat.send(text)


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
async def test_response_fields_read_the_reply_as_genkit_does(sync: bool) -> None:
    model = ScriptedModel([REPLY, {**REPLY, "message": {"role": "model", "content": [{"text": "plain"}]}}])
    chat = nba.define_agent("charts", model=model, store=nba.InMemorySessionStore()).chat()
    res = await send(chat, "draw it", sync)
    assert res.text == "Here is your chart."
    assert res.reasoning == "The user wants a chart."
    assert res.media == Media.model_validate(IMAGE)
    assert res.data == {"rows": 3}
    # messages: the chat's history after the turn, not the reply alone
    assert [m.role for m in res.messages] == ["user", "model"] and res.messages == chat.messages
    res.assert_valid()
    second = await send(chat, "and now?", sync)
    assert (second.reasoning, second.media, second.data) == ("", None, None)
    assert [m.role for m in second.messages] == ["user", "model", "user", "model"]
    assert res.messages is not chat.messages and len(res.messages) == 2  # each response keeps its own


def blocked(message: Any) -> dict[str, Any]:
    return {"message": message, "finishReason": "blocked"} if message else {"finishReason": "blocked"}


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
async def test_assert_valid_refuses_a_blocked_turn_and_a_turn_without_a_message(sync: bool) -> None:
    model = ScriptedModel([blocked({"role": "model", "content": [{"text": "I can't help with that."}]})])
    res = await send(nba.define_agent("guarded", model=model).chat(), "something bad", sync)
    assert res.finish_reason == "blocked"
    with pytest.raises(nba.FailedPreconditionError, match=r"^FAILED_PRECONDITION: Generation blocked\.$"):
        res.assert_valid()

    async def silent(inp: nba.AgentInput, ctx: nba.TurnContext) -> None:
        return None

    empty = await send(nba.define_custom_agent("silent", silent).chat(), "hello", sync)
    assert empty.finish_reason == "stop" and empty.message is None
    with pytest.raises(
        nba.FailedPreconditionError, match=r"^FAILED_PRECONDITION: Agent response has no message\.$"
    ):
        empty.assert_valid()


def test_a_blocked_output_with_an_error_says_why() -> None:
    out = nba.AgentOutput.model_validate(
        {"finishReason": "blocked", "error": {"status": "FAILED_PRECONDITION", "message": "safety"}}
    )
    with pytest.raises(
        nba.FailedPreconditionError, match=r"^FAILED_PRECONDITION: Generation blocked: safety\.$"
    ):
        nba.AgentResponse(out).assert_valid()


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
async def test_chunk_fields_read_each_model_chunk(sync: bool) -> None:
    model = ScriptedModel([REPLY], stream_chunks=[CHUNKS])
    chat = nba.define_agent("charts", model=model).chat()
    if sync:
        turn = chat.send_stream_sync("draw it")
        chunks = [c for c in turn if c.model_chunk is not None]
    else:
        chunks = [c async for c in chat.send_stream("draw it") if c.model_chunk is not None]
    assert [(c.reasoning, c.text, c.media, c.data) for c in chunks] == [
        ("thinking", "", None, None),
        ("", "Here is ", Media.model_validate(IMAGE), None),
        ("", "your chart.", None, {"rows": 3}),
    ]
