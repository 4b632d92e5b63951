"""Tell someone a turn paused: ``define_agent(..., on_pause=nba.notify.webhook(url, secret=...))``.

An agent's ``on_pause`` hook is called with a `PauseEvent` each time one of
its turns ends paused on interrupts (a first pause, a re-pause, what a
partial answer leaves waiting). The engine never waits for it: a hook that
returns an awaitable runs as a background task, and whatever it raises is
logged, so a hook can neither block nor fail the turn.

`webhook` is the built-in hook. It POSTs the pause as JSON::

    {"type": "turn.paused", "agent": "bank", "sessionId": "...", "snapshotId": "...",
     "requestedBy": "ana", "interrupts": [{"name", "ref", "input", "title", "question",
     "expiresAt"?}], "answerUrl": "https://agents.example/bank/answer?token=..." | null}

signed as **Standard Webhooks** (standardwebhooks.com) sign: the headers
``webhook-id`` (the same on every retry of one event), ``webhook-timestamp``
(Unix seconds of the attempt) and ``webhook-signature: v1,<base64 HMAC-SHA256
of "<id>.<timestamp>.<body>">``. The key is the secret's bytes; a secret
written the Standard Webhooks way, ``whsec_<base64>``, is its decoded bytes,
so their libraries verify it as it is. Delivery runs in the background and is
retried on a transport error, a timeout, 408, 429 and 5xx (`max_attempts`
tries, backoff doubling from `backoff` seconds, at most 30 s); `Webhook.deliveries` keeps
what happened, `Webhook.flush` waits for deliveries in flight.

With ``public_url``, the payload carries ``answerUrl``: a link to the page
``nb-agents serve`` renders for the pause (`nb_agents.server.answer_page`),
signed with a key derived from the same secret (`AnswerLinks`), bound to the
agent and the paused snapshot, and expiring after ``link_ttl``. It answers
once: the store's exactly-once resume takes the first answer, and the page
says a pause was already answered.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import inspect
import json
import logging
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .errors import PermissionDeniedError
from .types import Part

if TYPE_CHECKING:
    import httpx

__all__ = [
    "AnswerLinks",
    "LinkClaim",
    "LinkError",
    "OnPause",
    "PauseEvent",
    "Webhook",
    "fire",
    "links_of",
    "sign",
    "webhook",
]

log = logging.getLogger("nb_agents.notify")

_LINK_CONTEXT = b"nb_agents answer link v1"
_RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
_KEPT = 100  # deliveries remembered by a webhook
_MAX_BACKOFF = 30.0  # seconds: the longest wait between two attempts
_TASKS: set[asyncio.Task[Any]] = set()  # background hooks: kept alive until they end


@dataclass(frozen=True)
class PauseEvent:
    """A turn that ended paused on interrupts.

    Attributes:
        agent: The agent's name.
        session_id: The session.
        snapshot_id: The paused snapshot (None for an agent without a store).
        interrupts: The paused tool-request parts.
        requested_by: The session's owner (who asked), when known.
    """

    agent: str
    session_id: str
    snapshot_id: str | None
    interrupts: Sequence[Part]
    requested_by: str | None = None


OnPause = Callable[[PauseEvent], "Awaitable[None] | None"]
"""An agent's ``on_pause`` hook: called when a turn pauses; an awaitable it returns runs in the background."""


def fire(hook: OnPause, event: PauseEvent) -> None:
    """Call `hook` without ever blocking or failing the turn (see the module docstring)."""
    try:
        result = hook(event)
    except Exception:
        log.exception("on_pause hook %r failed for session %s", hook, event.session_id)
        return
    if inspect.isawaitable(result):
        task = asyncio.ensure_future(result)
        _TASKS.add(task)
        task.add_done_callback(_done)


def _done(task: asyncio.Task[Any]) -> None:
    _TASKS.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("on_pause hook failed", exc_info=task.exception())


def _key(secret: str | bytes) -> bytes:
    if isinstance(secret, bytes):
        key = secret
    elif isinstance(secret, str) and secret.startswith("whsec_"):
        try:
            key = base64.b64decode(secret[6:], validate=True)
        except ValueError:
            raise ValueError("a whsec_ secret is base64 after its prefix; this one is not") from None
    elif isinstance(secret, str):
        key = secret.encode()
    else:
        raise TypeError(f"secret must be a str or bytes, got {type(secret).__name__}")
    if len(key) < 16:
        raise ValueError("the webhook secret must be at least 16 bytes (24 random bytes is the usual)")
    return key


def sign(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """The Standard Webhooks ``webhook-signature`` of a body: ``v1,<base64 HMAC-SHA256>``."""
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class LinkError(PermissionDeniedError):
    """An answer link that is not valid (tampered, of another agent) or has expired (`expired`)."""

    def __init__(self, message: str, *, expired: bool = False) -> None:
        super().__init__(message)
        self.expired = expired


@dataclass(frozen=True)
class LinkClaim:
    """What a verified answer link grants: answering one paused snapshot of one agent, until `expires`."""

    agent: str
    snapshot_id: str
    expires: int  # Unix seconds


class AnswerLinks:
    """Signed, expiring links to the answer page of a pause (see the module docstring).

    A token is ``<base64url JSON {a: agent, s: snapshot, e: expiry, n: nonce}>.<base64url
    HMAC-SHA256>`` under a key derived from the webhook's secret.

    Example:
        >>> links = AnswerLinks(b"0123456789abcdef", public_url="http://127.0.0.1:8000")
        >>> links.verify(links.token("bank", "snap-1"), "bank").snapshot_id
        'snap-1'
    """

    def __init__(self, secret: str | bytes, *, public_url: str, ttl: timedelta = timedelta(hours=24)) -> None:
        if not isinstance(public_url, str) or not public_url.startswith(("http://", "https://")):
            raise ValueError(f"public_url must be the server's http(s) URL, got {public_url!r}")
        if ttl <= timedelta(0):
            raise ValueError("link_ttl must be positive")
        self._key = hmac.new(_key(secret), _LINK_CONTEXT, hashlib.sha256).digest()
        self.public_url = public_url.rstrip("/")
        self.ttl = ttl

    def token(self, agent: str, snapshot_id: str, *, now: float | None = None) -> str:
        """A signed token for answering `snapshot_id` of `agent`."""
        expires = int((now if now is not None else time.time()) + self.ttl.total_seconds())
        body = json.dumps(
            {"a": agent, "s": snapshot_id, "e": expires, "n": secrets.token_hex(8)}, separators=(",", ":")
        ).encode()
        mac = hmac.new(self._key, body, hashlib.sha256).digest()
        return f"{_b64(body)}.{_b64(mac)}"

    def url(self, agent: str, snapshot_id: str) -> str:
        """The answer page's URL for the pause."""
        return f"{self.public_url}/{quote(agent)}/answer?token={self.token(agent, snapshot_id)}"

    def verify(self, token: str, agent: str, *, now: float | None = None) -> LinkClaim:
        """The claim of a token; `LinkError` when it is not valid for `agent` or has expired."""
        bad = LinkError("This answer link is not valid (it was changed, or is not for this agent).")
        if not isinstance(token, str) or token.count(".") != 1 or len(token) > 2048:
            raise bad
        head, mac = token.split(".")
        try:
            body, given = _unb64(head), _unb64(mac)
        except ValueError:
            raise bad from None
        if not hmac.compare_digest(hmac.new(self._key, body, hashlib.sha256).digest(), given):
            raise bad
        claim = json.loads(body)  # signed by us: well-formed
        if claim.get("a") != agent or not isinstance(claim.get("s"), str):
            raise bad
        if int(claim.get("e", 0)) <= (now if now is not None else time.time()):
            raise LinkError(
                "This answer link has expired; answer from the notebook or the inbox.", expired=True
            )
        return LinkClaim(agent, claim["s"], int(claim["e"]))


@dataclass
class Delivery:
    """One event's delivery: its id, the attempts made, and how it ended."""

    id: str
    session_id: str
    attempts: int = 0
    status: int | None = None  # the last HTTP status, if any answered
    error: str | None = None  # the last transport error, if any
    delivered: bool = False
    done: bool = False
    payload: dict[str, Any] = field(default_factory=dict)


class Webhook:
    """The ``on_pause`` hook `webhook` builds (see the module docstring).

    Attributes:
        url: Where events are POSTed.
        links: The answer links it puts in ``answerUrl`` (None without ``public_url``).
        answered_as: Who the audit says answered through a link.
        deliveries: The latest deliveries (up to 100), oldest first.
    """

    def __init__(
        self,
        url: str,
        *,
        secret: str | bytes,
        public_url: str | None = None,
        link_ttl: timedelta = timedelta(hours=24),
        answered_as: str = "answer-link",
        max_attempts: int = 6,
        backoff: float = 0.5,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"webhook url must be an http(s) URL, got {url!r}")
        if max_attempts < 1 or backoff < 0 or timeout <= 0:
            raise ValueError("max_attempts must be at least 1, backoff not negative, timeout positive")
        self.url = url
        self._key = _key(secret)
        self.links = AnswerLinks(secret, public_url=public_url, ttl=link_ttl) if public_url else None
        self.answered_as = answered_as
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.timeout = timeout
        self._transport = transport
        self.deliveries: list[Delivery] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"Webhook(url={self.url!r}, answer_links={self.links is not None})"

    def payload(self, event: PauseEvent) -> dict[str, Any]:
        """The JSON an event is POSTed as."""
        from .render.summary import interrupt_summary

        items = []
        for part in event.interrupts:
            tr = part.tool_request
            if tr is None:
                continue
            summary = interrupt_summary(part)
            item: dict[str, Any] = {"name": tr.name, "ref": tr.ref, "input": tr.input, "title": summary.title}
            if summary.question:
                item["question"] = summary.question
            if summary.expires_at:
                item["expiresAt"] = summary.expires_at
            items.append(item)
        answer = (
            self.links.url(event.agent, event.snapshot_id)
            if self.links is not None and event.snapshot_id
            else None
        )
        return {
            "type": "turn.paused",
            "agent": event.agent,
            "sessionId": event.session_id,
            "snapshotId": event.snapshot_id,
            "requestedBy": event.requested_by,
            "interrupts": items,
            "answerUrl": answer,
        }

    def __call__(self, event: PauseEvent) -> None:
        """Start delivering `event` in the background; returns at once."""
        delivery = Delivery(f"msg_{uuid.uuid4().hex}", event.session_id, payload=self.payload(event))
        self.deliveries.append(delivery)
        del self.deliveries[:-_KEPT]
        task = asyncio.ensure_future(self._deliver(delivery))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def flush(self, timeout: float | None = None) -> None:
        """Wait until the deliveries in flight have ended (delivered, or out of attempts)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    async def _deliver(self, d: Delivery) -> None:
        import httpx  # imported when a first event goes out: `import nb_agents` stays light

        body = json.dumps(d.payload, separators=(",", ":"), ensure_ascii=False).encode()
        try:
            async with httpx.AsyncClient(timeout=self.timeout, transport=self._transport) as client:
                for attempt in range(self.max_attempts):
                    if attempt:
                        await asyncio.sleep(min(self.backoff * 2 ** (attempt - 1), _MAX_BACKOFF))
                    d.attempts += 1
                    now = int(time.time())
                    headers = {
                        "content-type": "application/json",
                        "webhook-id": d.id,
                        "webhook-timestamp": str(now),
                        "webhook-signature": sign(self._key, d.id, now, body),
                    }
                    try:
                        resp = await client.post(self.url, content=body, headers=headers)
                    except httpx.HTTPError as exc:
                        d.error = f"{type(exc).__name__}: {exc}"
                        continue
                    d.status = resp.status_code
                    if 200 <= resp.status_code < 300:
                        d.delivered = True
                        return
                    if resp.status_code not in _RETRY_STATUSES:
                        return  # the receiver refused it: sending it again changes nothing
            log.warning("webhook %s: event %s not delivered after %d attempts", self.url, d.id, d.attempts)
        finally:
            d.done = True


def webhook(
    url: str,
    *,
    secret: str | bytes,
    public_url: str | None = None,
    link_ttl: timedelta = timedelta(hours=24),
    answered_as: str = "answer-link",
    max_attempts: int = 6,
    backoff: float = 0.5,
    timeout: float = 10.0,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Webhook:
    """An ``on_pause`` hook that POSTs each pause to `url`, signed (see the module docstring).

    Args:
        url: The receiver.
        secret: The signing secret (at least 16 bytes; ``whsec_<base64>`` as Standard Webhooks writes it).
        public_url: The URL clients reach ``nb-agents serve`` at; with it each event
            carries ``answerUrl``, a signed link to the pause's answer page.
        link_ttl: How long an answer link stays valid.
        answered_as: Who the audit names as answering through a link.
        max_attempts: Tries per event (the first and its retries).
        backoff: Seconds before the first retry; each next one waits twice as long.
        timeout: Seconds one attempt may take.
        transport: An httpx transport to send with (tests: `httpx.MockTransport`).

    Example:
        >>> hook = webhook("https://hooks.example/x", secret="s3cret-s3cret-s3cret",
        ...                public_url="https://agents.example")
        >>> hook.links is not None
        True
    """
    return Webhook(
        url,
        secret=secret,
        public_url=public_url,
        link_ttl=link_ttl,
        answered_as=answered_as,
        max_attempts=max_attempts,
        backoff=backoff,
        timeout=timeout,
        transport=transport,
    )


def links_of(hook: Any) -> tuple[AnswerLinks, str] | None:
    """The answer links of an agent's ``on_pause`` hook and who answers through them, if it makes any."""
    if isinstance(hook, Webhook) and hook.links is not None:
        return hook.links, hook.answered_as
    return None
