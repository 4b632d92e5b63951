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

from .events import OnPause, PauseEvent, fire
from .links import AnswerLinks, LinkClaim, LinkError, sign
from .webhook import Delivery, Webhook, links_of, webhook

__all__ = [
    "AnswerLinks",
    "Delivery",
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
