"""`nb_agents.notebook.compare`: a chat and its fork, answered differently, side by side."""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers import text_response, tool_call_response

import nb_agents as nba
from nb_agents.middleware import ApprovalHold, ToolApproval
from nb_agents.notebook import compare
from nb_agents.render.compare import diff_html
from nb_agents.testing import FunctionModel

pytestmark = pytest.mark.anyio

EVIL = "<img src=x onerror=alert(1)>"


def _reply(req: nba.GenerateRequest) -> Any:
    last = req.messages[-1]
    if last.role == "user":
        return tool_call_response(("transferMoney", "t1", {"amount": 500, "memo": EVIL}))
    (out,) = [p.tool_response.output for p in last.content if p.tool_response is not None]
    if out == f"sent 500 {EVIL}":
        return text_response(f"Sent $500 to bob. {EVIL}")
    return text_response("Cancelled: nothing was sent to bob.")


async def _branches() -> tuple[nba.AgentResponse, nba.AgentResponse, list[int]]:
    ran: list[int] = []

    @nba.tool(name="transferMoney")
    async def transfer(amount: int, memo: str) -> str:
        ran.append(amount)
        return f"sent {amount} {memo}"

    agent = nba.define_agent(
        "bank",
        model=FunctionModel(_reply),
        tools=[transfer],
        store=nba.InMemorySessionStore(),
        use=[ToolApproval(allowed_tools=[])],
    )
    chat = agent.chat()
    paused = await chat.send("send $500 to bob")
    fork = await chat.fork()
    yes = await chat.resume(restart=[paused.interrupts[0].approve()])
    hold = ApprovalHold.claim(paused.interrupts[0].part)
    assert hold is not None
    no = await fork.resume(respond=[hold.deny()])
    return yes, no, ran


def _cell(html: str, cls: str, row: int) -> str:
    cells = re.findall(rf'<td class="{cls}"[^>]*>(.*?)</td>', html, flags=re.S)
    return cells[row]


async def test_the_two_branches_show_their_answers_tools_and_replies_flat() -> None:
    yes, no, ran = await _branches()
    assert ran == [500]
    view = compare(yes, no)
    assert (view.a.label, view.b.label) == ("Original", "Fork")
    assert [(a.name, a.verb, a.ran) for a in view.a.answers] == [("transferMoney", "approved", True)]
    assert [(a.name, a.verb, a.ran) for a in view.b.answers] == [("transferMoney", "denied", False)]
    html = view._repr_mimebundle_()["text/html"]
    # answers, tools and replies, each in its branch's column
    assert "approved" in _cell(html, "nba-branch-a", 0) and "</code> ran" in _cell(html, "nba-branch-a", 0)
    told = _cell(html, "nba-branch-b", 0)
    assert "denied" in told and "</code> did not run" in told
    # what the model was told, in words: the message, not a JSON object
    assert "the assistant was told: “The user denied the call to &#x27;transferMoney&#x27;.”" in told
    assert "{" not in told and "&quot;error&quot;" not in told
    assert "transferMoney" in _cell(html, "nba-branch-a", 1) and "sent 500" in _cell(html, "nba-branch-a", 1)
    assert "no tool ran" in _cell(html, "nba-branch-b", 1)
    assert "Sent $500 to bob." in _cell(html, "nba-branch-a", 2)
    assert "Cancelled: nothing was sent to bob." in _cell(html, "nba-branch-b", 2)
    # flat: one table, no toggles, no ids; replies that differ throughout are not "diffed"
    assert (
        "<details" not in html and "session" not in html and html.count("<table") == 2
    )  # the arguments, and the branches
    assert "<del" not in html and "<ins" not in html
    # model and tool text is escaped everywhere: no tag of theirs survives
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    text = view._repr_mimebundle_()["text/plain"]
    assert (
        "Original:" in text and "transferMoney: denied (did not run; the assistant was told: The user" in text
    )


def test_replies_that_differ_in_a_few_words_have_those_words_highlighted() -> None:
    from nb_agents.render.compare import Branch, Comparison

    def msg(role: str, text: str) -> nba.Message:
        return nba.Message.model_validate({"role": role, "content": [{"text": text}]})

    ask = msg("user", "move it")
    close = Comparison(
        Branch("A", [ask, msg("model", "Sent $500 to savings today.")]),
        Branch("B", [ask, msg("model", "Sent $250 to savings today.")]),
    ).html()
    assert re.findall(r"<del[^>]*>(.*?)</del>", close) == ["$500"]
    assert re.findall(r"<ins[^>]*>(.*?)</ins>", close) == ["$250"]
    assert "Highlighted: the words only that reply says." in close
    apart = Comparison(
        Branch("A", [ask, msg("model", "Done: sent $500 to savings. Your savings grow.")]),
        Branch("B", [ask, msg("model", "Nothing was sent (you said no). The $500 stays in checking.")]),
    ).html()
    assert "<del" not in apart and "<ins" not in apart and "Highlighted" not in apart


async def test_labels_and_chats() -> None:
    yes, no, _ = await _branches()
    assert yes.chat is not None and no.chat is not None
    view = compare(no.chat, yes.chat, labels=("No", "Yes"))
    assert (view.a.label, view.b.label) == ("No", "Yes")
    assert view.a.final_text.startswith("Cancelled") and view.b.final_text.startswith("Sent")
    assert view.pause is not None and len(view.shared) == 2
    with pytest.raises(TypeError, match="responses or chats"):
        compare("yes", no)  # type: ignore[arg-type]


def test_diff_html_escapes_and_marks_words() -> None:
    out = diff_html("keep <b>bold</b>", "keep <script>x</script>", labels=("one", "<two>"))
    assert "<b>" not in out and "<script>" not in out and "<two>" not in out and "&lt;two&gt;" in out
    assert re.findall(r"<del[^>]*>(.*?)</del>", out) == ["b&gt;bold&lt;/b"]
    assert re.findall(r"<ins[^>]*>(.*?)</ins>", out) == ["script&gt;x&lt;/script"]


# -- "Try another answer" on an answered form ------------------------------------------------
async def test_try_another_answer_forks_the_pause_and_compares_the_branches() -> None:
    from widget_helpers import html_of, widgets_of

    from nb_agents.notebook import TurnView

    ran: list[int] = []

    @nba.tool(name="transferMoney")
    async def transfer(amount: int, memo: str) -> str:
        ran.append(amount)
        return f"sent {amount} {memo}"

    store = nba.InMemorySessionStore()
    agent = nba.define_agent(
        "bank",
        model=FunctionModel(_reply),
        tools=[transfer],
        store=store,
        use=[ToolApproval(allowed_tools=[])],
    )
    chat = agent.chat()
    paused = await chat.send("send $500 to bob")
    view = TurnView(paused, chat)
    assert view.fork_panel is None  # nothing answered yet: nothing to try instead
    view.forms[0].approve_button.click()
    await view.task
    assert view.state == "done" and ran == [500]
    panel = view.fork_panel
    assert panel is not None and panel in view.children
    assert panel.button.description == "Try another answer"

    panel.button.click()
    branch = await panel.task
    assert branch is not None and branch.state == "waiting" and len(branch.forms) == 1
    assert branch.chat is not None and branch.chat.session_id != paused.session_id
    assert [r.fork_of for r in await agent.forks(paused.session_id or "")] == [paused.snapshot_id]
    branch.forms[0].deny_button.click()
    await branch.task
    assert branch.state == "done" and ran == [500]  # denied in the fork: the tool did not run again
    assert len(panel.comparisons) == 1
    shown = html_of(panel)
    assert "First answer" in shown and "Another answer" in shown and "nba-compare" in shown
    assert "<img" not in shown
    # flat: the fork's form gave way to the table; one button, no card in a card, one toggle
    assert [type(w).__name__ for w in panel.box.children] == ["HTML"]
    assert [w for w in widgets_of(view) if isinstance(w, TurnView)] == [view]
    buttons = [w for w in widgets_of(view) if getattr(w, "description", "") == "Try another answer"]
    assert buttons == [panel.button] and panel.button.layout.display is None
    assert html_of(view).count("<details") == 1  # the record's raw JSON, nothing else
    assert html_of(view).count("Transfer money") == 1  # the question, once
    # the record a saved notebook keeps holds the comparison too
    record = view.record_html()
    assert "Another answer" in record and "nba-compare" in record and "<img" not in record
    assert record.count("<details") == 1
    # a second try makes a second fork
    panel.button.click()
    assert (await panel.task) is not None and len(panel.branches) == 2
    assert panel.button.layout.display == "none"  # until that fork is answered
    assert len(await agent.forks(paused.session_id or "")) == 2
