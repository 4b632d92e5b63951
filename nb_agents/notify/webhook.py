"""`webhook`: the built-in ``on_pause`` hook, a signed POST sent in the background (`nb_agents.notify`)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .events import PauseEvent
from .links import AnswerLinks, _key, sign

if TYPE_CHECKING:
    import httpx

__all__ = ["Delivery", "Webhook", "links_of", "webhook"]

log = logging.getLogger("nb_agents.notify")

_RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
_KEPT = 100  # deliveries remembered by a webhook
_MAX_BACKOFF = 30.0  # seconds: the longest wait between two attempts


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
    """An ``on_pause`` hook that POSTs each pause to `url`, signed (see the module docstring).

    ``nba.notify.webhook(url, secret=...)`` builds one.

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
        from ..render.summary import interrupt_summary

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


webhook = Webhook
"""``nba.notify.webhook(url, secret=...)``, the name DESIGN.md gives it: builds a `Webhook`."""


def links_of(hook: Any) -> tuple[AnswerLinks, str] | None:
    """The answer links of an agent's ``on_pause`` hook and who answers through them, if it makes any."""
    if isinstance(hook, Webhook) and hook.links is not None:
        return hook.links, hook.answered_as
    return None
