"""A webhook receiver on 127.0.0.1 that records every POST and verifies its Standard Webhooks signature.

The verification is written here from the Standard Webhooks spec, apart from
`nb_agents.notify`: the signed content is ``<webhook-id>.<webhook-timestamp>.<body>``,
HMAC-SHA256 under the secret, base64 in ``webhook-signature`` as ``v1,<sig>``
(several may be given, space-separated), and a timestamp more than five minutes
off is refused. It can answer slowly (hold each request until `release`), or
fail the first requests with 503 (so the sender retries).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

TOLERANCE = 300  # seconds, as the spec suggests


def verify(secret: bytes, headers: dict[str, str], body: bytes, *, now: float | None = None) -> bool:
    msg_id, stamp, given = (
        headers.get(h, "") for h in ("webhook-id", "webhook-timestamp", "webhook-signature")
    )
    if not msg_id or not stamp.isdigit() or not given:
        return False
    if abs((now if now is not None else time.time()) - int(stamp)) > TOLERANCE:
        return False
    mac = hmac.new(secret, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    expected = base64.b64encode(mac).decode()
    for sig in given.split(" "):
        version, _, value = sig.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return True
    return False


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    verified: bool
    answered: int = 0

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Serve on `port` (a free one if 0); see the module docstring."""

    secret: bytes
    port: int = 0
    fail_first: int = 0
    hold: bool = False
    received: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the base class's name
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                got = Received(headers, body, verify(receiver.secret, headers, body))
                with receiver.changed:
                    receiver.received.append(got)
                    failing = len(receiver.received) <= receiver.fail_first
                    receiver.changed.notify_all()
                if receiver.hold:
                    receiver.release.wait(60)
                got.answered = 503 if failing else 200
                self.send_response(got.answered)
                self.send_header("content-length", "0")
                self.end_headers()
                with receiver.changed:
                    receiver.changed.notify_all()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = int(self.httpd.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}/hooks/agents"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, check: Any, what: str, timeout: float = 30.0) -> None:
        """Block until `check()` holds (a bound, not a timing assertion)."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not check():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what}; received: {self.received}")
                self.changed.wait(left)

    def delivered(self) -> list[Received]:
        return [r for r in self.received if r.answered == 200]

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
