"""ChatWidget: send, stream, inline forms for paused turns, errors in the transcript."""

from __future__ import annotations

import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel
from widget_helpers import html_of, widgets_of

import nb_agents as nba
from nb_agents.notebook import ChatWidget, TurnView
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Ask(BaseModel):
    question: str


class Reply(BaseModel):
    approved: bool


ask_user = nba.define_interrupt(name="askUser", input_schema=Ask, output_schema=Reply)


def agent_with(*responses: object, stream: object = None) -> tuple[nba.Agent, ScriptedModel]:
    model = ScriptedModel(list(responses), stream_chunks=stream)  # type: ignore[arg-type]
    return nba.define_agent("helper", model=model, tools=[ask_user], store=nba.InMemorySessionStore()), model


async def test_send_streams_the_reply_into_the_transcript() -> None:
    chunks = [[{"content": [{"text": "Hel"}]}, {"content": [{"text": "lo there"}]}]]
    agent, _ = agent_with(text_response("Hello there"), stream=chunks)
    chat_box = ChatWidget(agent)
    seen: list[str] = []
    chat_box.message_box.value = "hi <b>you</b>"
    chat_box.send_button.click()
    assert chat_box.message_box.value == "" and chat_box.send_button.disabled
    stream = chat_box.transcript.children[-1].children[0]
    stream.observe(lambda change: seen.append(change["new"]), names="value")
    res = await chat_box.task
    assert res is not None and res.text == "Hello there"
    assert any("Hel" in s and "lo there" not in s for s in seen)
    shown = html_of(chat_box.transcript)
    assert "hi &lt;b&gt;you&lt;/b&gt;" in shown and "Hello there" in shown
    assert not chat_box.send_button.disabled
    assert [m.role for m in chat_box.chat.messages] == ["user", "model"]


async def test_empty_text_sends_nothing() -> None:
    agent, model = agent_with(text_response("x"))
    chat_box = ChatWidget(agent)
    chat_box.message_box.value = "   "
    chat_box.send_button.click()
    assert chat_box.task is None and model.calls == 0


async def test_a_paused_turn_shows_its_form_inline_and_the_chat_goes_on() -> None:
    agent, model = agent_with(
        tool_call_response(("askUser", "a1", {"question": "Go ahead?"}), text="Let me check"),
        text_response("Done."),
        text_response("You are welcome."),
    )
    chat_box = ChatWidget(agent)
    await chat_box.send("please do it")
    [view] = chat_box.views
    assert isinstance(view, TurnView) and view in widgets_of(chat_box.transcript)
    # the model's own words come with the question, once
    assert "Go ahead?" in html_of(view) and html_of(chat_box.transcript).count("Let me check") == 1
    view.forms[0].approve_button.click()
    await view.task
    assert "Done." in html_of(chat_box.transcript)
    await chat_box.send("thanks")
    assert "You are welcome." in html_of(chat_box.transcript) and model.calls == 3
    assert [m.role for m in chat_box.chat.messages][-2:] == ["user", "model"]


async def test_a_failed_turn_shows_the_error_and_send_works_again() -> None:
    agent, _ = agent_with()  # the model has no answer: the turn fails
    chat_box = ChatWidget(agent)
    assert (await chat_box.send("hello")) is None
    assert "has no response for call #1" in html_of(chat_box.transcript)
    assert not chat_box.send_button.disabled


async def test_an_existing_chat_shows_its_history_and_its_open_form() -> None:
    agent, _ = agent_with(
        text_response("first answer"),
        tool_call_response(("askUser", "a1", {"question": "Sure?"})),
        text_response("ok then"),
    )
    chat = agent.chat()
    await chat.send("one")
    await chat.send("two")
    chat_box = ChatWidget(chat)
    shown = html_of(chat_box.transcript)
    assert "first answer" in shown and "Sure?" in shown
    [view] = chat_box.views
    view.forms[0].approve_button.click()
    await view.task
    assert "ok then" in html_of(chat_box.transcript)


async def test_static_mode_shows_no_widget(monkeypatch: pytest.MonkeyPatch) -> None:
    agent, _ = agent_with(text_response("hi"))
    chat_box = ChatWidget(agent)
    await chat_box.send("hello")
    assert "application/vnd.jupyter.widget-view+json" in chat_box._repr_mimebundle_()
    monkeypatch.setenv("NB_AGENTS_STATIC", "1")
    bundle = chat_box._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"} and "hello" in bundle["text/html"]
