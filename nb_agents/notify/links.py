"""Answer links: signed, single-use, expiring URLs to the page that answers a pause, and the keys."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import quote

from ..errors import PermissionDeniedError

__all__ = ["AnswerLinks", "LinkClaim", "LinkError", "sign"]

_LINK_CONTEXT = b"nb_agents answer link v1"


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
