"""The agent of the inbox tests under a real `nb-agents serve`: trust_app's agent, with principals.

`app` is the ASGI app ``nb-agents serve inbox_app:app`` runs: the attacked agent of
the trust tests (its tools write a ledger line for every run) on the store
``NBA_TRUST_DB`` names, behind a context provider that knows three keys: ana's and
bob's (principals) and lee's (an approver). With ``NBA_HOOK_URL`` set, the agent's
``on_pause`` is a webhook to it signed with ``NBA_HOOK_SECRET``, whose answer links
point at ``NBA_PUBLIC_URL``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from starlette.requests import Request
from trust_app import make_agent

import nb_agents as nba
from nb_agents.server import create_app

KEYS = {
    "key-ana": {"uid": "ana"},
    "key-bob": {"uid": "bob"},
    "key-lee": {"uid": "lee", "roles": ["approver"]},
}
SECRET = "whsec_" + "c2VjcmV0LWZvci10aGUtaW5ib3gtdGVzdHMtMDEyMzQ1"


def headers(who: str) -> dict[str, str]:
    return {"authorization": f"Bearer key-{who}"}


def provide(request: Request) -> dict[str, Any]:
    key = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if key not in KEYS:
        raise nba.UnauthenticatedError("Unauthenticated")
    return {"auth": dict(KEYS[key])}


def _store(db: str) -> nba.SessionStore:
    if "dbname=" in db or db.startswith("postgres"):
        from nb_agents.stores.postgres import PostgresSessionStore

        return PostgresSessionStore(db)
    return nba.SqliteSessionStore(db or "inbox.db")


def build() -> Any:
    hook_url = os.environ.get("NBA_HOOK_URL")
    hook = (
        nba.notify.webhook(
            hook_url,
            secret=os.environ.get("NBA_HOOK_SECRET", SECRET),
            public_url=os.environ.get("NBA_PUBLIC_URL"),
            backoff=float(os.environ.get("NBA_HOOK_BACKOFF", "0.2")),
            max_attempts=int(os.environ.get("NBA_HOOK_ATTEMPTS", "30")),
            timeout=float(os.environ.get("NBA_HOOK_TIMEOUT", "10")),
        )
        if hook_url
        else None
    )
    agent = make_agent(
        _store(os.environ.get("NBA_TRUST_DB", "")),
        Path(os.environ.get("NBA_TRUST_LEDGER", os.devnull)),
        on_pause=hook,
    )
    return create_app([agent], context_provider=provide)


app = build() if "NBA_TRUST_LEDGER" in os.environ else None
