"""Every widget the notebook builds, fed hostile text in every field, holds no live markup (issue 21, item 1).

Text from a model, a tool, an MCP server or a schema is data. ipywidgets' HTML
widgets are written into the page with ``innerHTML`` and their labels are
typeset by MathJax, so each piece of that text must reach a widget escaped
(`nb_agents.render._html.esc`), as a label MathJax skips (`widget_label`), and
as a link only when it is http(s) (`safe_url`). This test builds every kind of
form (approval holds, respond, approve-respond, restart, approve-restart,
continue, JSON, MCP elicitation in form and URL mode), answers them (partial
answers, records, an expired pause's record, a stale form, a fork and its
comparison), the pending view, the chat widget and the tables, with a hostile
string in every schema field (titles, descriptions, enum names, const titles,
defaults, property names), in tool names and descriptions, in pause data and
in model text. It walks each widget tree and parses every HTML value (and
every static bundle): no element or attribute that could run script, no link
but http(s)/mailto, no Label or HTMLMath widget, and no text MathJax would
typeset (outside a block it skips).
"""

from __future__ import annotations

import asyncio
import re
from html.parser import HTMLParser
from typing import Any, Literal

import ipywidgets as widgets
import pytest
from pydantic import BaseModel, ConfigDict, Field
from widget_helpers import widgets_of

import nb_agents as nba
from nb_agents.mcp.elicitation import elicitation_pause
from nb_agents.middleware import ApprovalHold, ToolApproval
from nb_agents.notebook import ChatWidget, Inbox, TurnView, compare
from nb_agents.notebook.pending import PendingView
from nb_agents.testing import FunctionModel

pytestmark = pytest.mark.anyio

PAYLOAD = '<img src=x onerror="window.__pwned=1">"><svg onload=window.__pwned=1>$x^2$ \\(y\\) $5'
"""Markup that runs script if it is parsed, and TeX that MathJax would typeset."""


def H(tag: str) -> str:  # noqa: N802 - reads as the hostile string it is
    """The payload, tagged with where it was put (to find it again as text)."""
    return f"[{tag}]{PAYLOAD}"


# -- what the tree may hold ----------------------------------------------------------------------
SCRIPTABLE = {
    "script", "iframe", "object", "embed", "img", "svg", "math", "style", "link", "meta", "base",
    "form", "input", "button", "textarea", "select", "video", "audio", "source", "frame", "frameset",
    "template", "portal", "applet", "image", "noscript",
}  # fmt: skip
URL_ATTRS = {"href", "src", "action", "formaction", "xlink:href", "srcdoc", "data", "poster", "background"}
SKIPPED_BY_MATHJAX = {"pre", "code", "script", "noscript", "style", "textarea"}


class Inert(HTMLParser):
    """Parses one HTML value; records every problem (tags, attributes, TeX MathJax would typeset)."""

    def __init__(self, where: str) -> None:
        super().__init__(convert_charrefs=True)
        self.where = where
        self.problems: list[str] = []
        self.stack: list[tuple[str, bool]] = []  # (tag, whether MathJax skips it and all inside)
        self.text = ""

    def skipped(self) -> bool:
        return any(skip for _, skip in self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SCRIPTABLE:
            self.problems.append(f"{self.where}: a live <{tag}>")
        classes = ""
        for key, value in attrs:
            key = key.lower()
            if key.startswith("on"):
                self.problems.append(f"{self.where}: a live {key}= on <{tag}>")
            if key in URL_ATTRS and not re.match(r"^(https?://|mailto:)", (value or "").strip(), re.I):
                self.problems.append(f"{self.where}: <{tag} {key}={value!r}> is not an http(s) link")
            if key == "style" and re.search(r"url\(|expression|javascript:", value or "", re.I):
                self.problems.append(f"{self.where}: a style that loads or runs something: {value!r}")
            if key == "class":
                classes = value or ""
        skip = tag in SKIPPED_BY_MATHJAX or "mathjax_ignore" in classes.split()
        if tag not in ("br", "hr", "wbr", "col"):
            self.stack.append((tag, skip))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        for n in range(len(self.stack) - 1, -1, -1):
            if self.stack[n][0] == tag:
                del self.stack[n:]
                break

    def handle_data(self, data: str) -> None:
        self.text += data
        if ("$" in data or "\\" in data) and not self.skipped():
            self.problems.append(f"{self.where}: TeX MathJax would typeset: {data.strip()[:60]!r}")


def problems_in(html: str, where: str) -> tuple[list[str], str]:
    parser = Inert(where)
    parser.feed(html)
    parser.close()
    return parser.problems, parser.text


class Walk:
    """What a walk over widget trees and bundles found: problems, and the text a person reads."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.text = ""
        self.widgets = 0

    def html(self, html: str, where: str) -> None:
        found, text = problems_in(html, where)
        self.problems += found
        self.text += text + "\n"

    def tree(self, root: Any, where: str) -> None:
        for w in widgets_of(root):
            self.widgets += 1
            name = f"{where}/{type(w).__name__}"
            if isinstance(w, widgets.HTMLMath | widgets.Label):
                self.problems.append(f"{name}: a {type(w).__name__} widget typesets its text")
            if isinstance(w, widgets.HTML):
                self.html(w.value, name)
            if isinstance(w, widgets.Button | widgets.ToggleButton):
                if w.icon:
                    self.problems.append(f"{name} {w.description!r}: an icon glyph leads its accessible name")
                continue  # a button's words are ours, written as text, never typeset
            description = getattr(w, "description", "")
            if description:
                if getattr(w, "description_allow_html", False):
                    found, text = problems_in(description, f"{name} description")
                    self.problems += found
                    self.text += text + "\n"
                elif "$" in description or "\\" in description:
                    self.problems.append(f"{name}: MathJax would typeset its label {description!r}")
                else:
                    self.text += description + "\n"
            if isinstance(w, widgets.Text | widgets.Textarea):  # values: text, set as the control's value
                self.text += str(w.value) + "\n"
            for option in getattr(w, "options", ()) or ():  # dropdown labels: text, never typeset
                self.text += (option[0] if isinstance(option, tuple) else str(option)) + "\n"
        bundle = getattr(root, "_repr_mimebundle_", None)
        if callable(bundle):
            shown = bundle()
            if "text/html" in shown:
                self.html(shown["text/html"], f"{where} (its saved record)")

    def bundle(self, value: Any, where: str) -> None:
        shown = value._repr_mimebundle_()
        self.html(shown["text/html"], where)

    def check(self, *tags: str) -> None:
        assert self.problems == [], "\n".join(self.problems)
        missing = [t for t in tags if f"[{t}]" not in self.text]
        assert missing == [], f"hostile text never reached a widget (the walk proves nothing): {missing}"
        assert "<img src=x onerror=" in self.text  # shown to the person, as text


# -- hostile tools and schemas -------------------------------------------------------------------
class Ask(BaseModel):
    """What the model passes; every schema field is hostile."""

    model_config = ConfigDict(title=H("model-title"), populate_by_name=True)

    amount: float = Field(title=H("title"), description=H("description"))
    kind: Literal["a", "b"] = Field(
        default="a", title=H("enum-title"), json_schema_extra={"enumNames": [H("enum-name"), H("enum-b")]}
    )
    fixed: Literal["only"] = Field(default="only", title=H("const-title"))
    note: str = Field(default=H("default"), alias=H("property"))


class Reply(BaseModel):
    """A respond form: hostile titles, descriptions, enum names, const titles, defaults."""

    answer: str = Field(default=H("reply-default"), title=H("reply-title"), description=H("reply-desc"))
    level: Literal["low", "high"] = Field(
        default="low", title=H("level"), json_schema_extra={"enumNames": [H("level-low"), H("level-high")]}
    )
    mode: Literal["x"] = Field(default="x", title=H("reply-const"))


class Ok(BaseModel):
    """Approval-shaped, with a hostile reason field."""

    approved: bool
    why: str | None = Field(default=None, title=H("why-title"), description=H("why-desc"))


class Resume(BaseModel):
    pin: int = Field(ge=1000, le=9999, title=H("pin-title"), description=H("pin-desc"))


INPUT = {"amount": 5, "kind": "a", "fixed": "only", H("property"): H("input-value")}
ELICIT_SCHEMA = {
    "type": "object",
    "required": ["tag"],
    "properties": {
        "tag": {"type": "string", "title": H("elicit-title"), "description": H("elicit-desc")},
        "pick": {"type": "string", "oneOf": [{"const": "p", "title": H("elicit-const")}]},
        "old": {"type": "string", "enum": ["a"], "enumNames": [H("elicit-enum-name")], "default": "a"},
        H("elicit-property"): {"type": "boolean", "default": True},
    },
}


def _tools(ran: list[str]) -> list[nba.Tool]:
    @nba.tool(name="payBill", description=H("tool-description"))
    async def pay_bill(inp: Ask) -> dict[str, Any]:
        ran.append("payBill")
        return {"paid": H("tool-result"), "ok": True}

    ask_user = nba.define_interrupt(
        name="askUser", description=H("interrupt-description"), input_schema=Ask, output_schema=Reply
    )
    confirm = nba.define_interrupt(name="confirm", input_schema=Ask, output_schema=Ok)

    @nba.resumable_tool(name="unlock", resume=Resume)
    async def unlock(inp: Ask, reply: Resume | None) -> str:
        if reply is None:
            raise nba.Interrupt({"title": H("pause-title"), "message": H("pause-message")})
        return H("unlock-result")

    @nba.resumable_tool(name="sign", resume=Ok)
    async def sign(inp: Ask, reply: Ok | None) -> str:
        if reply is None:
            raise nba.Interrupt({"details": H("pause-details")})
        return "signed"

    @nba.tool(name="wipe")
    async def wipe(inp: Ask, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"question": H("pause-question")})
        return H("wipe-result")

    @nba.tool(name="elicit")
    async def elicit(url: bool, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            params: dict[str, Any] = {"message": H("elicit-message")}
            if url:
                params |= {"mode": "url", "url": "javascript:window.__pwned=1", "elicitationId": "e"}
            else:
                params["requestedSchema"] = ELICIT_SCHEMA
            ctx.interrupt(elicitation_pause(H("server"), H("server-tool"), params))
        return "answered"

    return [pay_bill, ask_user, confirm, unlock, sign, wipe, elicit]


CALLS = ["payBill", "askUser", "confirm", "unlock", "sign", "wipe"]


def _model(request: nba.GenerateRequest) -> dict[str, Any]:
    last = request.messages[-1]
    if last.role == "tool":
        return {"message": {"role": "model", "content": [{"text": H("model-reply")}]}, "finishReason": "stop"}
    text = last.text
    if text == "elicit":
        calls = [("elicit", "e1", {"url": False}), ("elicit", "e2", {"url": True})]
    else:
        calls = [(name, f"r{n}", INPUT) for n, name in enumerate(CALLS if text == "all" else [text])]
    content: list[dict[str, Any]] = [{"text": H("model-note")}]
    content += [{"toolRequest": {"name": name, "ref": ref, "input": inp}} for name, ref, inp in calls]
    return {"message": {"role": "model", "content": content}, "finishReason": "stop"}


def _agent(**gate: Any) -> tuple[nba.Agent, list[str]]:
    ran: list[str] = []
    tools = _tools(ran)
    approval = ToolApproval(allowed_tools=[t.name for t in tools if t.name != "payBill"], **gate)
    agent = nba.define_agent(
        "hostile", model=FunctionModel(_model), tools=tools, store=nba.InMemorySessionStore(), use=[approval]
    )
    return agent, ran


async def _settled(view: TurnView) -> None:
    for _ in range(200):
        if view.settled and (view.task is None or view.task.done()):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{view!r} never settled")


# -- the walk ------------------------------------------------------------------------------------
async def test_every_form_and_record_of_a_turn_holds_no_live_markup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent, ran = _agent()
    walk = Walk()
    res = await agent.chat().send("all")
    view = TurnView(res)
    modes = {f.interrupt.name: f.mode for f in view.forms}
    assert modes == {
        "payBill": "hold",
        "askUser": "respond",
        "confirm": "approve-respond",
        "unlock": "restart",
        "sign": "approve-restart",
        "wipe": "continue",
    }
    for form in view.forms:
        if form.edit_toggle is not None:
            form.edit_toggle.value = True  # the Edit-arguments fields of every form
    walk.tree(view, "waiting")
    walk.check(
        "title", "description", "enum-name", "const-title", "property", "input-value",
        "interrupt-description", "reply-title", "reply-desc", "level-low", "reply-const", "reply-default",
        "pin-title", "pin-desc", "pause-title", "pause-message", "pause-details", "pause-question",
        "model-note",
    )  # fmt: skip
    # answer each on its own (a partial answer each), with hostile reasons and replies
    by = {f.interrupt.name: f for f in view.forms}
    by["payBill"].reason.widget.value = H("reason")
    by["payBill"].deny_button.click()
    await view.task
    walk.tree(view, "one answered")
    by["askUser"].submit_button.click()
    await view.task
    by["confirm"].approve_button.click()
    await view.task
    by["unlock"].reply.children["pin"].widget.value = 1234
    by["unlock"].submit_button.click()
    await view.task
    by["sign"].approve_button.click()
    await view.task
    by["wipe"].continue_button.click()
    await _settled(view)
    assert ran == [] and view.state == "done"
    walk.tree(view, "record")
    walk.check("reason", "model-reply", "unlock-result", "wipe-result")
    # the same pause drawn again: a stale form, collapsed to what was answered
    stale = TurnView(res)
    stale.forms[0].approve_button.click()
    await stale.task
    assert stale.state == "stale"
    walk.tree(stale, "stale")
    # the audit, the snapshot and the pending listing as tables
    walk.bundle(await agent.audit(res.session_id or ""), "audit table")
    walk.bundle(await agent.get_snapshot(res.snapshot_id), "snapshot")
    walk.check()


async def test_mcp_elicitation_forms_hold_no_live_markup_and_no_javascript_link(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent, _ = _agent()
    walk = Walk()
    view = TurnView(await agent.chat().send("elicit"))
    assert [f.mode for f in view.forms] == ["elicitation", "elicitation"]
    walk.tree(view, "elicitation")
    walk.check(
        "elicit-title", "elicit-desc", "elicit-const", "elicit-enum-name", "elicit-property",
        "elicit-message", "server", "server-tool",
    )  # fmt: skip
    assert "javascript:window.__pwned=1" in walk.text  # the URL is shown, as text
    for form in view.forms:
        form.decline_button.click()
        await asyncio.sleep(0)
    await _settled(view)
    walk.tree(view, "elicitation record")
    walk.check()


async def test_a_remote_pause_with_a_hostile_tool_name_gets_json_fields_that_stay_text() -> None:
    out = nba.AgentOutput.model_validate(
        {
            "finishReason": "interrupted",
            "message": {
                "role": "model",
                "content": [
                    {"text": H("remote-note")},
                    {
                        "toolRequest": {"name": H("named"), "ref": "x", "input": {H("key"): H("value")}},
                        "metadata": {"interrupt": {"title": H("remote-title"), "prompt": H("prompt")}},
                    },
                    {  # no title: the tool's name (in words) is the form's title
                        "toolRequest": {"name": H("toolname"), "ref": "y", "input": H("plain-input")},
                        "metadata": {"interrupt": True},
                    },
                ],
            },
        }
    )
    view = TurnView(nba.AgentResponse(out))
    assert [f.mode for f in view.forms] == ["json", "json"]
    for form in view.forms:
        form.edit_toggle.value = True
    walk = Walk()
    walk.tree(view, "json forms")
    walk.bundle(nba.AgentResponse(out), "response")
    walk.check("toolname", "key", "value", "remote-title", "prompt", "remote-note", "plain-input")


async def test_an_expired_pause_a_fork_and_its_comparison_hold_no_live_markup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    walk = Walk()
    late, _ = _agent(expires_in=0.2, on_expiry=H("expiry-message"))
    expiring = TurnView(await late.chat().send("payBill"))
    assert expiring.forms[0].countdown is not None
    assert expiring.deadline_task is not None
    await expiring.deadline_task
    assert expiring.state == "done"
    walk.tree(expiring, "expired")
    walk.check("expiry-message", "model-reply")

    agent, _ = _agent()
    chat = agent.chat()
    paused = await chat.send("payBill")
    view = TurnView(paused, chat)
    view.forms[0].approve_button.click()
    await view.task
    assert view.fork_panel is not None
    branch = await view.fork_panel.try_another()
    assert branch is not None
    walk.tree(view, "forked")
    branch.forms[0].reason.widget.value = H("fork-reason")
    branch.forms[0].deny_button.click()
    await branch.task
    assert view.fork_panel.comparisons
    walk.tree(view, "compared")
    walk.check("fork-reason", "tool-result")

    other = await agent.fork(paused.snapshot_id or "")  # compare() of two responses, directly
    hold = ApprovalHold.claim(other.last.interrupts[0].part)
    assert hold is not None
    no = await other.resume(respond=[hold.deny({"error": H("told")})])
    assert view.result is not None
    walk.bundle(compare(view.result, no), "compare()")
    walk.check("told")


async def test_pending_inbox_chat_widget_and_rules_tables_hold_no_live_markup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NB_AGENTS_STATIC", raising=False)
    agent, _ = _agent()
    chat = agent.chat()
    res = await chat.send("all")
    walk = Walk()
    listing = PendingView(agent, await agent.pending())
    walk.tree(listing, "pending")
    walk.bundle(await agent.pending(), "pending table")
    box = ChatWidget(chat)
    walk.tree(box, "chat")
    inbox = await Inbox([agent])
    assert inbox.rows, "the inbox lists the hostile pauses (the walk proves nothing otherwise)"
    walk.tree(inbox, "inbox")
    hold = [i for i in res.interrupts if i.name == "payBill"][0]
    await chat.resume(restart=[hold.approve(always=True)], partial=True)
    walk.bundle(await chat.rules(), "rules table")
    walk.check("model-note", "title", "property")
