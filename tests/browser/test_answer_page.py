"""The answer page a webhook's link opens, in headless Chromium, against a real ``nb-agents serve``.

The served agent (`tests/inbox/inbox_app.py`) POSTs each pause to a receiver on
127.0.0.1 with a signed ``answerUrl``. A person opens it: the page shows the
same summary as the notebook form (title, question, the arguments as rows; no
raw JSON), with the model's hostile text inert; Approve runs the tool once; a
second visit says it was already answered; a tampered link is refused. Light
and dark (``prefers-color-scheme``). Screenshots: tests/browser/artifacts/answer-page-*.png.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
for extra in (TESTS / "inbox", TESTS / "trust"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from edges.served import Served, free_port  # noqa: E402
from inbox_app import SECRET, headers  # noqa: E402
from receiver import Receiver  # noqa: E402
from trust_app import call, directive, read_ledger  # noqa: E402

import nb_agents as nba  # noqa: E402
from nb_agents.notify.links import _key  # noqa: E402

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ARTIFACTS = HERE / "artifacts"
TIMEOUT_MS = 20_000
HOSTILE = '<img src=x onerror="window.pwned=1">savings'


@dataclass
class Setup:
    server: Served
    receiver: Receiver
    ledger: Path

    def pause(self, ref: str, **extra: Any) -> tuple[str, str]:
        """ana's new pause: its session id and the answer link the receiver got."""
        ana = nba.remote_agent(f"{self.server.url}/trust", headers=headers("ana"))
        res = ana.chat().send_sync(directive(call(ref, 500, to=HOSTILE, **extra)))
        assert res.finish_reason == "interrupted"
        found: list[str] = []

        def seen() -> bool:
            found[:] = [
                r.json["answerUrl"]
                for r in self.receiver.delivered()
                if r.json["sessionId"] == res.session_id
            ]
            return bool(found)

        self.receiver.wait(seen, "the pause's webhook")
        return res.session_id or "", found[0]

    def runs(self) -> list[str]:
        return [line["ref"] for line in read_ledger(self.ledger)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("answer-page")
    ledger = tmp / "ledger.jsonl"
    receiver = Receiver(_key(SECRET))
    port = free_port()
    env = {
        "NBA_TRUST_LEDGER": str(ledger),
        "NBA_TRUST_DB": str(tmp / "inbox.db"),
        "NBA_HOOK_URL": receiver.url,
        "NBA_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "PYTHONPATH": os.pathsep.join([str(TESTS / "inbox"), str(TESTS / "trust"), str(TESTS)]),
    }
    server = Served(tmp, target="inbox_app:app", env=env, port=port)
    try:
        yield Setup(server, receiver, ledger)
    finally:
        server.stop()
        receiver.stop()


def shot(page: Page, label: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"answer-page-{label}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_answer_page_approves_once(setup: Setup, chromium: Browser, scheme: str) -> None:
    ref = f"page-{scheme}"
    _, link = setup.pause(ref)
    context = chromium.new_context(viewport={"width": 720, "height": 760}, color_scheme=scheme)  # type: ignore[arg-type]
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(link)
        page.wait_for_selector("button.approve", timeout=TIMEOUT_MS)
        assert page.locator("h1").inner_text() == "An agent is waiting for your answer"
        body = page.locator("main").inner_text()
        assert "Transfer" in body and "asked by ana" in body
        assert HOSTILE in body  # shown as the text it is...
        assert page.evaluate("window.pwned") is None  # ...never run
        assert page.locator("img").count() == 0 and "Raw JSON" not in body
        assert [b.inner_text() for b in page.locator("button").all()] == ["Approve", "Deny", "Cancel"]
        shot(page, f"{scheme}-waiting")
        page.click("button.approve")
        page.wait_for_selector("text=Approved.", timeout=TIMEOUT_MS)
        shot(page, f"{scheme}-approved")
        assert ref in setup.runs() and setup.runs().count(ref) == 1
        # the second visit (the link clicked again, or opened by someone else)
        page.goto(link)
        page.wait_for_selector("h1", timeout=TIMEOUT_MS)
        assert page.locator("h1").inner_text() == "Already answered"
        assert page.locator("button").count() == 0
        shot(page, f"{scheme}-again")
        assert errors == []
    finally:
        context.close()
    assert setup.runs().count(ref) == 1


def test_a_tampered_link_and_a_deny_with_a_reason(setup: Setup, chromium: Browser) -> None:
    _, link = setup.pause("page-deny")
    context = chromium.new_context(viewport={"width": 720, "height": 600})
    try:
        page = context.new_page()
        page.goto(link[:-4] + ("AAAA" if not link.endswith("AAAA") else "BBBB"))
        page.wait_for_selector("h1", timeout=TIMEOUT_MS)
        assert page.locator("h1").inner_text() == "This link is not valid"
        shot(page, "tampered")
        page.goto(link)
        page.fill("#reason", "Not this month")
        page.click("button.deny")
        page.wait_for_selector("text=Denied.", timeout=TIMEOUT_MS)
        shot(page, "denied")
    finally:
        context.close()
    assert "page-deny" not in setup.runs()
