"""ChatWidget: send, stream, inline forms for paused turns, errors in the transcript."""

from __future__ import annotations

import asyncio

import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel
from widget_helpers import html_of, widgets_of

import nb_agents as nba
from nb_agents.notebook import ChatWidget, TurnView
from nb_agents.testing import FunctionModel, ScriptedModel

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


async def test_enter_in_the_box_sends_and_a_refused_text_goes_back_in_the_box() -> None:
    agent, model = agent_with(
        tool_call_response(("askUser", "a1", {"question": "Sure?"})),
        text_response("ok"),
        text_response("next"),
    )
    chat_box = ChatWidget(agent)
    chat_box.message_box.value = "do it"
    chat_box.message_box.submit()  # Enter, as the browser sends it
    assert chat_box.message_box.value == ""
    await chat_box.task
    [view] = chat_box.views
    chat_box.message_box.submit("and then?")  # a form waits: held back, the text stays
    assert model.calls == 1 and chat_box.message_box.value == "and then?"
    assert "Answer the question above first" in chat_box.notice.value and chat_box.send_button.disabled
    view.forms[0].approve_button.click()
    await view.task
    assert not chat_box.send_button.disabled and chat_box.notice.value == ""
    chat_box.message_box.submit()
    await chat_box.task
    assert "next" in html_of(chat_box.transcript) and model.calls == 3


async def test_stop_aborts_the_turn_in_flight() -> None:
    import asyncio

    from nb_agents.testing import FunctionModel

    async def slow(_request: object) -> str:
        await asyncio.sleep(30)
        return "too late"

    agent = nba.define_agent("slow", model=FunctionModel(slow), store=nba.InMemorySessionStore())
    chat_box = ChatWidget(agent)
    task = chat_box.send("take your time")
    await asyncio.sleep(0.05)
    assert chat_box.busy and chat_box.stop_button.layout.display is None
    chat_box.stop_button.click()
    res = await asyncio.wait_for(task, 10)
    assert res is not None and res.finish_reason == "aborted"
    assert "Stopped." in html_of(chat_box.transcript) and not chat_box.busy
    assert chat_box.stop_button.layout.display == "none"


async def test_a_chat_rebuilt_from_the_store_shows_its_history_and_open_form(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = nba.SqliteSessionStore(tmp_path / "chat.db")
    model = ScriptedModel(
        [
            text_response("first *answer*"),
            tool_call_response(("askUser", "a1", {"question": "Sure?"})),
            text_response("ok"),
        ]
    )
    agent = nba.define_agent("helper", model=model, tools=[ask_user], store=store)
    chat = agent.chat(session_id="s-1")
    await chat.send("one")
    await chat.send("two")
    # a new kernel: a new agent object on the same file, a chat known only by its session id
    again = nba.define_agent(
        "helper", model=model, tools=[ask_user], store=nba.SqliteSessionStore(tmp_path / "chat.db")
    )
    chat_box = ChatWidget(again.chat(session_id="s-1"))
    assert chat_box.loading is not None
    await chat_box.loading
    shown = html_of(chat_box.transcript)
    assert "one" in shown and "<em>answer</em>" in shown and "Sure?" in shown
    [view] = chat_box.views
    assert chat_box.waiting is view and chat_box.send_button.disabled
    view.forms[0].approve_button.click()
    await view.task
    assert "ok" in html_of(chat_box.transcript) and chat_box.waiting is None
    assert "first" in chat_box._repr_mimebundle_()["text/html"]


async def test_the_header_names_the_agent_and_the_empty_state_says_what_to_do() -> None:
    agent, _ = agent_with(text_response("It is 3 pm."))
    agent.description = "Answers <questions> about the bank."
    chat_box = ChatWidget(agent, examples=["What time is it?", "Transfer $500"])
    header = chat_box.header.value
    assert "helper" in header and "Answers &lt;questions&gt; about the bank." in header
    assert chat_box.empty.layout.display is None  # shown before the first message
    assert "Ask helper something" in html_of(chat_box.empty) and "Shift+Enter" in html_of(chat_box.empty)
    assert chat_box.message_box.placeholder == "Message helper" and chat_box.message_box.label == "Message"
    buttons = [w for w in widgets_of(chat_box.empty) if hasattr(w, "click")]
    assert [b.description for b in buttons] == ["What time is it?", "Transfer $500"]
    assert chat_box.scroller.layout.max_height == "70vh"  # grows with the conversation, then scrolls

    buttons[0].click()  # an example is sent as if typed
    res = await chat_box.task
    assert res is not None and res.text == "It is 3 pm."
    assert chat_box.empty.layout.display == "none"
    assert agent.name in chat_box._repr_mimebundle_()["text/html"]


async def test_a_chat_with_history_shows_no_empty_state() -> None:
    agent, _ = agent_with(text_response("hi"))
    chat = agent.chat()
    await chat.send("hello")
    assert ChatWidget(chat).empty.layout.display == "none"


async def test_a_question_answered_elsewhere_moves_the_chat_to_where_that_answer_went() -> None:
    """kim answers the chat's question in another cell; the next message here goes on from
    kim's answer (the model hears it), not from the old pause, and a re-pause asks here."""
    agent, model = agent_with(
        tool_call_response(("askUser", "a1", {"question": "Go ahead?"})),
        tool_call_response(("askUser", "a2", {"question": "Really <b>sure</b>?"}), text="Kim said yes."),
        text_response("Done."),
        text_response("You are welcome."),
    )
    chat_box = ChatWidget(agent)
    res = await chat_box.send("please do it")
    assert res is not None
    await agent.chat(snapshot_id=res.snapshot_id).resume(
        respond=[res.interrupts[0].respond({"approved": True})], metadata={"answeredBy": "kim"}
    )
    chat_box.message_box.value = "thanks"
    assert chat_box.send() is None  # held back: this box still shows the question
    [view] = chat_box.views
    assert view.checking is not None and (await view.checking) is True
    assert chat_box.catching_up is not None
    await chat_box.catching_up
    assert view.state == "stale" and "approved by kim" in view.outcome
    again = chat_box.views[-1]
    assert again is not view and again.state == "waiting" and again in widgets_of(chat_box.transcript)
    shown = html_of(chat_box.transcript)
    assert "Kim said yes." in shown and "Really &lt;b&gt;sure&lt;/b&gt;?" in shown
    assert chat_box.chat.snapshot_id == again.response.snapshot_id != res.snapshot_id
    assert chat_box.message_box.value == "thanks" and chat_box.send_button.disabled  # the new question first
    again.forms[0].approve_button.click()
    assert (await again.task) is not None and "Done." in html_of(chat_box.transcript)
    assert (await chat_box.send()) is not None and model.calls == 4
    heard = [p.text for m in model.requests[-1].messages for p in m.content if p.text]
    assert heard[-3:] == ["Kim said yes.", "Done.", "thanks"], heard
    assert html_of(chat_box.transcript).count("Kim said yes.") == 1


async def test_a_chat_whose_question_was_answered_elsewhere_shows_nothing_twice_when_rechecked() -> None:
    agent, model = agent_with(
        tool_call_response(("askUser", "a1", {"question": "Go?"})), text_response("Ok.")
    )
    chat_box = ChatWidget(agent)
    res = await chat_box.send("go")
    assert res is not None
    await agent.chat(snapshot_id=res.snapshot_id).resume(
        respond=[res.interrupts[0].respond({"approved": False})], metadata={"answeredBy": "kim"}
    )
    [view] = chat_box.views
    assert (await view.recheck()) is True  # as after the next cell runs
    await chat_box.catching_up
    assert view.recheck() is None and len(chat_box.views) == 1 and not chat_box.send_button.disabled
    [record] = await agent.audit(res.session_id or "")
    assert html_of(chat_box.transcript).count("Ok.") == 1 and model.calls == 2
    assert chat_box.chat.snapshot_id == record.child_id != res.snapshot_id


async def test_a_chat_follows_two_partial_answers_given_elsewhere_to_the_turn_they_resumed() -> None:
    agent, model = agent_with(
        tool_call_response(("askUser", "a1", {"question": "One?"}), ("askUser", "a2", {"question": "Two?"})),
        text_response("Both answered."),
    )
    chat_box = ChatWidget(agent)
    res = await chat_box.send("ask twice")
    assert res is not None and len(res.interrupts) == 2
    for n, interrupt in enumerate(res.interrupts):  # each from the pause: the store moves it on
        await agent.chat(snapshot_id=res.snapshot_id).resume(
            respond=[interrupt.respond({"approved": n == 0})], metadata={"answeredBy": "kim"}, partial=True
        )
    [view] = chat_box.views
    assert (await view.recheck()) is True
    await chat_box.catching_up
    assert "Both answered." in html_of(chat_box.transcript) and model.calls == 2
    latest = await agent.get_snapshot(session_id=res.session_id)
    assert latest is not None and chat_box.chat.snapshot_id == latest.snapshot_id
    assert latest.finish_reason == "stop" and not chat_box.send_button.disabled


async def test_a_message_waits_while_the_chat_reads_where_an_answer_still_running_went() -> None:
    """The chat's form is sent while lee's answer, claimed first, still runs: the form closes,
    and a message typed meanwhile is held (sent then, it would leave from the old question)
    until the chat has followed lee's turn; then it goes on from lee's reply."""
    gate = asyncio.Event()

    async def model_fn(request: nba.GenerateRequest) -> object:
        last = request.messages[-1]
        if last.role == "tool":
            await gate.wait()
            return "lee's answer is in"
        if last.text == "go":
            return tool_call_response(("askUser", "a1", {"question": "Go?"}))
        return f"heard {last.text} after {request.messages[-2].text}"

    agent = nba.define_agent(
        "helper", model=FunctionModel(model_fn), tools=[ask_user], store=nba.InMemorySessionStore()
    )
    chat_box = ChatWidget(agent)
    res = await chat_box.send("go")
    assert res is not None
    lee = asyncio.ensure_future(
        agent.chat(snapshot_id=res.snapshot_id).resume(
            respond=[res.interrupts[0].respond({"approved": False})], metadata={"answeredBy": "lee"}
        )
    )
    while (await agent.get_snapshot(session_id=res.session_id or "")).snapshot_id == res.snapshot_id:
        await asyncio.sleep(0.01)  # lee's claim is taken; its turn waits on the model
    [view] = chat_box.views
    view.forms[0].approve_button.click()
    assert (await view.task) is None and view.state == "stale"
    chat_box.message_box.value = "next"
    assert chat_box.send() is None and "answered elsewhere" in chat_box.notice.value
    assert chat_box.message_box.value == "next" and chat_box.chat.snapshot_id == res.snapshot_id
    gate.set()
    await lee
    await chat_box.catching_up
    assert "s answer is in</p>" in html_of(chat_box.transcript) and chat_box.notice.value == ""
    sent = chat_box.send()
    assert sent is not None and (await sent) is not None
    assert "heard next after lee" in html_of(chat_box.transcript)  # from lee's reply, not the old question
