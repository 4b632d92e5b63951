"""Rendering: every public result has text and escaped HTML; static mode is deterministic."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from helpers import text_response, tool_call_response
from pydantic import BaseModel

import nb_agents as nba
from nb_agents.render import STATIC_ENV, static_mode
from nb_agents.testing import ScriptedModel
from nb_agents.types import AgentErrorInfo

pytestmark = pytest.mark.anyio

EVIL = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "' onmouseover='alert(3)",
]
PAYLOAD = " ".join(EVIL)


class Inert(HTMLParser):
    """Collects every element, attribute and text run of a document."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]
        self.links = getattr(self, "links", []) + [v or "" for k, v in attrs if k == "href"]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_inert(html: str, *, shows: str | None = PAYLOAD) -> None:
    parser = Inert()
    parser.feed(html)
    parser.close()
    assert not {"img", "script", "iframe", "svg", "object"} & set(parser.tags), parser.tags
    assert not [a for a in parser.attrs if a.lower().startswith("on")], parser.attrs
    # links (from markdown) go to http(s) or mailto only, in a new tab without a referrer
    assert set(parser.attrs) <= {"class", "style", "title", "open", "href", "target", "rel"}, parser.attrs
    links = getattr(parser, "links", [])
    assert all(u.startswith(("http://", "https://", "mailto:")) for u in links), links
    if shows is not None:
        # the payload is shown as text (and not eaten), at least its first line
        assert any(EVIL[0] in t for t in parser.text), "the payload should be visible as text"


class Ask(BaseModel):
    question: str


class Reply(BaseModel):
    approved: bool
    feedback: str | None = None


ask_user = nba.define_interrupt(
    name="askUser", input_schema=Ask, output_schema=Reply, request_metadata=lambda inp: {"why": PAYLOAD}
)


def evil_agent(store: nba.SessionStore | None) -> nba.Agent:
    @nba.tool(name="lookup")
    async def lookup(q: str) -> dict[str, str]:
        return {"found": PAYLOAD, "q": q}

    model = ScriptedModel(
        [
            tool_call_response(("lookup", "l1", {"q": PAYLOAD}), text=PAYLOAD),
            tool_call_response(("askUser", "a1", {"question": PAYLOAD}), ("lookup", "l2", {"q": "x"})),
            text_response(PAYLOAD),
        ]
    )
    return nba.define_agent("evil", model=model, tools=[ask_user, lookup], store=store)


@pytest.mark.parametrize("managed", ["client", "server"])
async def test_model_and_tool_text_is_escaped_everywhere(managed: str, tmp_path: Path) -> None:
    store = nba.SqliteSessionStore(tmp_path / "a.db") if managed == "server" else None
    agent = evil_agent(store)
    chat = agent.chat()
    paused = await chat.send(PAYLOAD)
    assert paused.finish_reason == "interrupted"
    assert_inert(paused._repr_mimebundle_()["text/html"])
    assert_inert(paused.raw._repr_mimebundle_()["text/html"])
    assert_inert(paused.message._repr_mimebundle_()["text/html"])  # type: ignore[union-attr]
    done = await chat.resume(respond=[paused.interrupts[0].respond({"approved": True, "feedback": PAYLOAD})])
    assert_inert(done._repr_mimebundle_()["text/html"])
    if store is not None:
        snap = await agent.get_snapshot(done.snapshot_id)
        assert snap is not None
        assert_inert(snap._repr_mimebundle_()["text/html"])
        trail = await agent.audit(done.session_id or "")
        assert len(trail) == 1
        assert_inert(trail._repr_mimebundle_()["text/html"])
    else:
        assert done.raw.state is not None  # the whole turn, tool calls included, comes from the state
        assert_inert(done.raw._repr_mimebundle_()["text/html"])


async def test_pending_list_artifacts_and_errors_are_escaped(tmp_path: Path) -> None:
    agent = evil_agent(nba.SqliteSessionStore(tmp_path / "a.db"))
    await agent.chat().send("go")
    waiting = await agent.pending()
    assert len(waiting) == 1
    assert_inert(waiting._repr_mimebundle_()["text/html"])
    assert_inert(waiting[0]._repr_mimebundle_()["text/html"])
    out = nba.AgentOutput(
        finish_reason="failed",
        message=nba.Message(role="model", content=[nba.Part(text=PAYLOAD)]),
        artifacts=[nba.Artifact(name=PAYLOAD, parts=[nba.Part(text=PAYLOAD), nba.Part(data={"x": PAYLOAD})])],
        error=AgentErrorInfo(status="INTERNAL", message=PAYLOAD),
    )
    bundle = out._repr_mimebundle_()
    assert_inert(bundle["text/html"])
    assert bundle["text/html"].count("&lt;script&gt;") >= 4  # text, artifact name, artifact parts, error
    media = nba.Message(
        role="model", content=[nba.Part.model_validate({"media": {"url": "javascript:alert(1)"}})]
    )
    assert_inert(media._repr_mimebundle_()["text/html"], shows=None)
    assert "href" not in media._repr_mimebundle_()["text/html"]


async def test_interrupted_turn_shows_interrupts_instead_of_a_model_bubble() -> None:
    first = tool_call_response(
        ("askUser", "a1", {"question": "Transfer $500?"}),
        ("lookup", "l2", {"q": "x"}),
        text="I will ask first",
    )
    model = ScriptedModel([first, text_response("All done.")])

    @nba.tool(name="lookup")
    async def lookup(q: str) -> dict[str, int]:
        return {"balance": 900}

    chat = nba.define_agent("a", model=model, tools=[ask_user, lookup]).chat()
    res = await chat.send("go")
    html = res._repr_mimebundle_()["text/html"]
    text = res._repr_mimebundle_()["text/plain"]
    # the model's words go with the question (once), not in a bubble of their own
    assert html.count("I will ask first") == 1 and 'class="nba-note"' in html
    assert "Ask user" in html and "Transfer $500?" in html and "Raw JSON" in html
    assert "Waiting for an answer" in html and text.startswith("Waiting for an answer")
    assert "<details" in html and "lookup" in html and "900" in html  # the finished call, collapsed
    done = await chat.resume(respond=[res.interrupts[0].respond({"approved": True})])
    html = done._repr_mimebundle_()["text/html"]
    assert "All done." in html and 'class="nba-text' in html
    assert "Waiting for an answer" not in html


async def test_every_public_result_has_text_and_html(tmp_path: Path) -> None:
    agent = evil_agent(nba.SqliteSessionStore(tmp_path / "a.db"))
    chat = agent.chat()
    res = await chat.send("hi")
    snap = await agent.get_snapshot(res.snapshot_id)
    waiting = await agent.pending()
    done = await chat.resume(respond=[res.interrupts[0].respond({"approved": False})])
    trail = await agent.audit(done.session_id or "")
    assert isinstance(waiting, list) and isinstance(trail, list)
    assert trail[0].kind == "respond" and "<table" in trail._repr_mimebundle_()["text/html"]
    for value in (res, res.raw, res.message, snap, waiting, waiting[0], trail, done):
        bundle = value._repr_mimebundle_()  # type: ignore[union-attr]
        assert set(bundle) == {"text/plain", "text/html"}, type(value)
        assert bundle["text/plain"] and bundle["text/html"]


async def run_script(tmp_path: Path, name: str) -> tuple[Any, ...]:
    agent = evil_agent(nba.SqliteSessionStore(tmp_path / f"{name}.db"))
    chat = agent.chat()
    res = await chat.send("hi")
    snap = await agent.get_snapshot(res.snapshot_id)
    waiting = await agent.pending()
    done = await chat.resume(respond=[res.interrupts[0].respond({"approved": True})])
    trail = await agent.audit(done.session_id or "")
    return res, res.raw, snap, waiting, done, trail


async def test_static_mode_renders_the_same_turn_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await run_script(tmp_path, "one")
    second = await run_script(tmp_path, "two")
    assert first[0].snapshot_id != second[0].snapshot_id  # different uuids, different times
    monkeypatch.setenv(STATIC_ENV, "1")
    assert static_mode()
    for a, b in zip(first, second, strict=True):
        assert a._repr_mimebundle_() == b._repr_mimebundle_()
        for mime in ("text/plain", "text/html"):
            assert first[0].snapshot_id not in a._repr_mimebundle_()[mime]
            assert first[0].session_id not in a._repr_mimebundle_()[mime]
    monkeypatch.setenv(STATIC_ENV, "0")
    assert not static_mode()
    # outside static mode the ids are there, collapsed under "Details"
    assert first[0].snapshot_id in first[0]._repr_mimebundle_()["text/html"]
    assert first[0].snapshot_id not in first[0]._repr_mimebundle_()["text/plain"]
    assert first[0]._repr_mimebundle_() != second[0]._repr_mimebundle_()


def test_import_and_render_without_ipywidgets() -> None:
    code = textwrap.dedent(
        """
        import sys
        import nb_agents as nba
        from nb_agents.testing import ScriptedModel
        reply = {"message": {"role": "model", "content": [{"text": "hi"}]}, "finishReason": "stop"}
        model = ScriptedModel([reply])
        res = nba.define_agent("a", model=model).chat().send_sync("hello")
        bundle = res._repr_mimebundle_()
        assert "hi" in bundle["text/html"], bundle
        assert "ipywidgets" not in sys.modules and "nb_agents.notebook" not in sys.modules
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


class FakeShell:
    """Stands in for IPython's shell object inside a kernel (it has a ``kernel``)."""

    kernel = object()


async def test_a_response_in_a_kernel_displays_as_a_turn_view(monkeypatch: pytest.MonkeyPatch) -> None:
    import IPython

    chat = evil_agent(None).chat()
    res = await chat.send("go")
    assert "application/vnd.jupyter.widget-view+json" not in res._repr_mimebundle_()  # no kernel
    monkeypatch.setattr(IPython, "get_ipython", lambda: FakeShell())
    bundle = res._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "Ask user" in bundle["text/html"] and bundle["text/plain"].startswith("Waiting for an answer")
    bare = nba.AgentResponse(res.raw)  # no chat: nothing could resume it
    assert "application/vnd.jupyter.widget-view+json" not in bare._repr_mimebundle_()
    monkeypatch.setenv(STATIC_ENV, "1")
    assert set(res._repr_mimebundle_()) == {"text/plain", "text/html"}


HOSTILE_MARKDOWN = (
    "**bold** <script>alert(1)</script> <img src=x onerror=alert(1)> "
    "[run](javascript:alert(1)) [data](data:text/html,<b>x</b>) ![pixel](https://track.example/p.png) "
    "<a href='javascript:alert(2)'>raw</a> [ok](https://genkit.dev) \\style{color:red}{x}"
)


def test_model_text_renders_as_markdown_with_raw_html_and_unsafe_links_inert() -> None:
    from nb_agents.render import markdown_html

    table = "| a | b |\n|---|---|\n| 1 | 2 |"
    text = f"I moved $500 to savings and $200 to checking.\n\n{table}\n\n```py\nprint(1)\n```"
    html = markdown_html(text)
    assert (
        "<table" in html and "<pre" in html and "<code" in html and "I moved $500 to savings and $200" in html
    )
    assert "mathjax_ignore" in html and "tex2jax_ignore" in html  # never typeset: dollars stay dollars
    hostile = markdown_html(HOSTILE_MARKDOWN)
    assert_inert(hostile, shows=None)
    assert "<strong>bold</strong>" in hostile and 'href="https://genkit.dev"' in hostile
    assert "[run](javascript:alert(1))" in hostile and "&lt;script&gt;" in hostile and "<img" not in hostile
    assert "\\style{color:red}{x}" in hostile and 'rel="noopener noreferrer nofollow"' in hostile


async def test_a_reply_in_markdown_is_escaped_and_inert_in_every_rendering() -> None:
    model = ScriptedModel([text_response(HOSTILE_MARKDOWN)])
    res = await nba.define_agent("md", model=model).chat().send("hi")
    for html in (res._repr_mimebundle_()["text/html"], res.message._repr_mimebundle_()["text/html"]):  # type: ignore[union-attr]
        assert_inert(html, shows=None)
        assert "<strong>bold</strong>" in html


def test_audit_rows_say_what_was_answered_in_words() -> None:
    from nb_agents.render import audit_words
    from nb_agents.stores.base import AuditRecord

    def rec(kind: str, answer: object, replaced: object = None) -> AuditRecord:
        return AuditRecord(
            "s", "p", "c", "payBill", "p1", kind, answer, replaced, "2024-05-03T12:02:00Z", "ana"
        )

    assert audit_words(rec("restart", {"toolApproved": True})) == "approved"
    assert (
        audit_words(rec("respond", {"error": "The user denied the call to 'payBill': not now"}))
        == "denied: not now"
    )
    assert audit_words(rec("restart", {"approved": True, "feedback": "fine"}, {"amount": 3})) == (
        "approved: fine (arguments edited)"
    )
    # rules in words: no rule ids, no "denyed"
    assert audit_words(rec("rule", {"rule": "deny:payBill", "action": "deny"})) == "denied by a rule"
    assert audit_words(rec("rule", {"rule": "always-c1e32ae1c8fc", "action": "allow"})) == (
        "approved by approve always (this session)"
    )
    assert audit_words(rec("respond", "the Q3 report")) == "answered: the Q3 report"


@pytest.mark.parametrize("live", [*EVIL[:3], '<div onclick="x()">a</div>', '<a href="javascript:x()">a</a>'])
def test_the_inertness_check_catches_live_html(live: str) -> None:
    with pytest.raises(AssertionError):
        assert_inert(f"<div>{live}</div>", shows=None)
