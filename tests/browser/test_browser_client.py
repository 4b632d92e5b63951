"""The seed's client-side section, for real: ``examples/browser-client`` in headless Chromium.

The page bundles Genkit's own ``remoteAgent`` (npm ``genkit`` 1.42.0, ``genkit/beta/client``,
bundled by esbuild from the example's lock file; `toolchain.ensure_browser_client`). It is
served by a static server on one 127.0.0.1 port, and drives ``nb-agents serve bank:agent``
(the example's agent, under the real command line in a subprocess) on another, with an API
key per user (``--api-key-env``) and CORS for exactly the page's origin (``--cors-origin``).
Every transfer the server's tool runs is a line in a ledger file the test reads.

Screenshots go to tests/browser/artifacts/browser-client-*.png.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from interop import toolchain

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXAMPLE = ROOT / "examples" / "browser-client"
ARTIFACTS = HERE / "artifacts"
START_TIMEOUT = 60.0  # seconds for the server to answer; a bound, not a timing assertion
TIMEOUT_MS = 20_000  # for each wait on the page

KEYS = {"ana": "key-for-ana-7f3a", "bob": "key-for-bob-19c2"}
HOSTILE_ACCOUNT = '<img src=x onerror="window.pwned=1">savings'
REQUEST = f"Transfer $500 to {HOSTILE_ACCOUNT}."
DETAILS = f"Transfer $500.00 from checking to {HOSTILE_ACCOUNT}."
REPLY = f"Done: $500.00 went to {HOSTILE_ACCOUNT} (transaction txn-0001)."


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


@contextlib.contextmanager
def static_server(root: Path) -> Iterator[str]:
    """A static file server for `root` on 127.0.0.1; yields its origin."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@dataclass
class Setup:
    server: str  # the agent server's base URL (its own origin)
    page_url: str  # the page, on the origin the server allows
    other_page_url: str  # the same page on an origin the server does not allow
    ledger: Path
    log: Path

    def transfers(self) -> list[dict[str, Any]]:
        if not self.ledger.exists():
            return []
        return [json.loads(line) for line in self.ledger.read_text().splitlines()]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    try:
        built = toolchain.ensure_browser_client()
    except toolchain.Unavailable as exc:
        if toolchain.in_ci():
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc))
    tmp = tmp_path_factory.mktemp("browser-client")
    site = tmp / "site"
    site.mkdir()
    shutil.copyfile(built / "index.html", site / "index.html")
    shutil.copytree(built / "dist", site / "dist")
    with static_server(site) as page_origin, static_server(site) as other_origin:
        port = _free_port()
        ledger, log = tmp / "ledger.jsonl", tmp / "server.log"
        env = {
            **os.environ,
            "BANK_KEYS": ",".join(f"{uid}={key}" for uid, key in KEYS.items()),
            "BANK_LEDGER": str(ledger),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        cmd = [
            *(sys.executable, "-m", "nb_agents", "serve", "bank:agent", "--port", str(port)),
            *("--api-key-env", "BANK_KEYS", "--cors-origin", page_origin),
        ]
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, cwd=EXAMPLE, env=env, stdout=out, stderr=subprocess.STDOUT)
        server = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                try:
                    httpx.get(server + "/", timeout=2)
                    break
                except httpx.TransportError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise AssertionError(f"nb-agents serve did not start:\n{log.read_text()}") from None
                    time.sleep(0.1)
            yield Setup(server, f"{page_origin}/index.html", f"{other_origin}/index.html", ledger, log)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@dataclass
class User:
    """One person's browser context on the page, logged in with their key."""

    page: Page
    name: str
    console: list[str] = field(default_factory=list)

    def listen(self) -> None:
        """Keep the page's console messages and uncaught errors in `console`."""
        self.page.on("console", lambda msg: self.console.append(f"{msg.type}: {msg.text}"))
        self.page.on("pageerror", lambda exc: self.console.append(f"pageerror: {exc}"))

    def shot(self, label: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"browser-client-{self.name}-{label}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def connect(self, setup: Setup, *, key: str, session_id: str = "", url: str | None = None) -> None:
        page = self.page
        page.goto(url or setup.page_url)
        page.fill("#server", setup.server)
        page.fill("#apiKey", key)
        page.fill("#sessionId", session_id)
        page.click("#connectButton")

    def status(self) -> str:
        return self.page.locator("#status").inner_text()

    def errors(self) -> list[str]:
        return self.page.locator(".msg.error").all_inner_texts()

    def wait_error(self, count: int) -> list[str]:
        self.page.wait_for_function(
            f"document.querySelectorAll('.msg.error').length >= {count}", timeout=TIMEOUT_MS
        )
        return self.errors()

    def send(self, text: str) -> None:
        self.page.wait_for_selector("#send:not([disabled])", timeout=TIMEOUT_MS)
        self.page.fill("#message", text)
        self.page.click("#send")

    def dialog_fields(self) -> list[tuple[str, str]]:
        dialog = self.page.locator("dialog#approval[open]")
        dialog.wait_for(state="visible", timeout=TIMEOUT_MS)
        terms = dialog.locator("dt").all_inner_texts()
        values = dialog.locator("dd").all_inner_texts()
        return list(zip(terms, values, strict=True))


@pytest.fixture
def users(request: pytest.FixtureRequest, chromium: Browser) -> Iterator[dict[str, User]]:
    """ana and bob, each in a browser context of their own; their pages are saved if the test fails."""
    failed_before = request.session.testsfailed
    made: dict[str, User] = {}
    contexts = []
    for name in ("ana", "bob"):
        context = chromium.new_context(viewport={"width": 900, "height": 760})
        contexts.append(context)
        made[name] = user = User(context.new_page(), name)
        user.listen()
    try:
        yield made
    finally:
        if request.session.testsfailed > failed_before:
            for user in made.values():
                shot = user.shot(f"failed-{request.node.name}")
                shot.with_suffix(".console.txt").write_text("\n".join(user.console) + "\n")
        for context in contexts:
            context.close()


def pause_a_transfer(user: User, setup: Setup) -> str:
    """`user` connects, asks for the transfer and sees the approval dialog; returns the session id."""
    user.connect(setup, key=KEYS[user.name])
    user.send(REQUEST)
    assert user.dialog_fields() == [("Action", "transferMoney"), ("Details", DETAILS)]
    session_id = user.page.locator("#status").get_attribute("data-session-id")
    assert session_id, user.status()
    return session_id


# the texts a model bubble showed while it streamed, recorded in the page
RECORD_STREAM = """() => {
  window.seen = [];
  new MutationObserver(() => {
    const bubble = document.querySelector('.msg.model');
    const text = bubble ? bubble.textContent : '';
    if (text && text !== window.seen.at(-1)) window.seen.push(text);
  }).observe(document.getElementById('log'), { childList: true, subtree: true, characterData: true });
}"""


def test_approve_in_the_dialog_streams_the_reply_into_the_page(setup: Setup, users: dict[str, User]) -> None:
    ana = users["ana"]
    pause_a_transfer(ana, setup)
    page = ana.page
    # the paused turn shows the dialog, not a model bubble; the model's text stays text
    assert page.locator(".msg.model").count() == 0
    assert page.locator("img").count() == 0 and page.evaluate("window.pwned") is None
    assert page.locator("dialog#approval h2").inner_text() == "Approval needed"
    ana.shot("1-approval-dialog")
    assert setup.transfers() == []  # nothing runs before the approval

    page.evaluate(RECORD_STREAM)
    page.click("#approve")
    bubble = page.locator(".msg.model:not([data-streaming])")
    bubble.wait_for(timeout=TIMEOUT_MS)
    assert bubble.inner_text() == REPLY
    ana.shot("2-reply-streamed")
    # it arrived in pieces: one chunk per word the model streamed (the page counts them), shown
    # as they came (what the page showed grew, each time a longer prefix of the reply; chunks
    # that reach the browser in one read may show at once, so the page shows at most one per chunk)
    assert bubble.get_attribute("data-chunks") == str(len(REPLY.split(" ")))
    seen: list[str] = page.evaluate("window.seen")
    assert seen[-1] == REPLY and 2 <= len(seen) <= len(REPLY.split(" ")), seen
    assert all(REPLY.startswith(s) for s in seen) and seen == sorted(seen, key=len)
    assert page.locator(".msg").all_inner_texts() == [
        REQUEST,
        f"Approved: {DETAILS}",
        REPLY,
    ]
    assert page.locator("img").count() == 0 and page.evaluate("window.pwned") is None
    assert setup.transfers() == [{"amount": 500.0, "toAccount": HOSTILE_ACCOUNT, "by": "ana"}]
    assert not [line for line in ana.console if line.startswith(("error", "pageerror"))], ana.console


def test_another_user_can_neither_see_nor_answer_the_session(setup: Setup, users: dict[str, User]) -> None:
    ana, bob = users["ana"], users["bob"]
    session_id = pause_a_transfer(ana, setup)
    paused = httpx.post(
        f"{setup.server}/bankingAgent/getSnapshot",
        json={"data": {"sessionId": session_id}},
        headers={"Authorization": KEYS["ana"]},
    ).json()["result"]
    before = len(setup.transfers())

    # bob, with his own key and ana's session id: opening it is NOT_FOUND, as for an unknown id
    bob.connect(setup, key=KEYS["bob"], session_id=session_id)
    (shown,) = bob.wait_error(1)
    assert shown == f"NOT_FOUND: Session {session_id} not found."
    assert bob.page.locator("#status").inner_text() == shown
    assert bob.page.locator("dialog#approval[open]").count() == 0
    assert bob.page.locator(".msg:not(.error)").count() == 0  # nothing of ana's conversation
    bob.shot("1-session-not-found")
    # answering her interrupt with a hand-made answer, and posting into her session: NOT_FOUND
    answer = {"toolResponse": {"name": "userApproval", "ref": "a1", "output": {"approved": True}}}
    bob.page.evaluate("(answer) => window.bankPage.resume({ respond: [answer] })", answer)
    assert bob.wait_error(2)[1].startswith("NOT_FOUND: "), bob.errors()
    bob.send("Transfer $900 to bob.")
    assert bob.wait_error(3)[2].startswith("NOT_FOUND: "), bob.errors()
    bob.shot("2-answer-refused")
    assert len(setup.transfers()) == before  # nothing ran

    # ana's session is as she left it: paused, and she can still answer it (from a fresh page)
    now = httpx.post(
        f"{setup.server}/bankingAgent/getSnapshot",
        json={"data": {"sessionId": session_id}},
        headers={"Authorization": KEYS["ana"]},
    ).json()["result"]
    assert now == paused
    ana.connect(setup, key=KEYS["ana"], session_id=session_id)
    assert ana.dialog_fields() == [("Action", "transferMoney"), ("Details", DETAILS)]
    assert ana.page.locator(".msg.user").all_inner_texts() == [REQUEST]
    ana.page.click("#approve")
    ana.page.locator(".msg.model:not([data-streaming])").wait_for(timeout=TIMEOUT_MS)
    assert ana.page.locator(".msg.model").inner_text() == REPLY.replace("txn-0001", f"txn-{before + 1:04d}")
    ana.shot("3-owner-answers-after-all")
    assert setup.transfers()[before:] == [{"amount": 500.0, "toAccount": HOSTILE_ACCOUNT, "by": "ana"}]


def test_a_wrong_key_and_a_foreign_origin_are_refused(setup: Setup, users: dict[str, User]) -> None:
    bob = users["bob"]
    before = len(setup.transfers())
    bob.connect(setup, key="not-a-key")
    bob.send(REQUEST)
    assert bob.wait_error(1) == ["PERMISSION_DENIED: Permission Denied"]
    # the same page served from an origin the server does not name: the browser blocks the call
    bob.connect(setup, key=KEYS["bob"], url=setup.other_page_url)
    bob.send(REQUEST)
    (blocked,) = bob.wait_error(1)
    assert "does it allow the origin http://127.0.0.1:" in blocked, blocked
    bob.shot("3-foreign-origin")
    assert bob.page.locator("dialog#approval[open]").count() == 0
    assert len(setup.transfers()) == before
