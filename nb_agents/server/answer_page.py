"""The page an answer link opens: a pause's summary, and Approve / Deny / Cancel.

An agent whose ``on_pause`` hook makes answer links (`nb_agents.notify.webhook`
with ``public_url``) gets ``GET`` and ``POST /<agent>/answer``:

* ``GET ?token=...`` verifies the link (`nb_agents.notify.AnswerLinks`: signed
  for this agent, not expired) and shows each waiting interrupt of the paused
  snapshot as the notebook form leads with it (`render.summary`: title,
  question, the arguments as rows; no raw JSON), with the verbs that fit all of
  them (`nb_agents.inbox.verbs_for`). A pause that was answered (by anyone,
  anywhere) says so; a tampered link is refused (403), an expired one too (410).
* ``POST`` takes an ``application/x-www-form-urlencoded`` body: the signed
  token (from a hidden field: the form carries its own credential, so a page
  on another site cannot forge the POST and no cookie is needed), ``action``
  (``approve``, ``deny``, ``cancel``) and an optional ``reason``. The answer
  applies to every waiting interrupt of the pause, is sent through
  `nb_agents.inbox.answer_items` (the engine's claim: it takes effect once, and
  a second answer is told it came too late), and is audited as answered by the
  hook's ``answered_as`` for the session's owner.

Every piece of model or tool text goes through `render._html.esc` (directly or
through the summary renderer); the page sends a strict Content-Security-Policy
(no script at all), ``no-referrer`` (the token never leaks to another site)
and ``no-store``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from ..errors import FailedPreconditionError, NbAgentsError
from ..inbox import VERBS, Verb, answer_items, quick_answer, verbs_for
from ..listings import InboxItem, PendingTurn
from ..notify import AnswerLinks, LinkError, links_of
from ..render._html import esc
from ..render.summary import summary_html
from ..types import SessionSnapshot
from .request import read_body

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["answer_routes", "page"]

_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'"
    ),
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
}
_LABELS = {"approve": "Approve", "deny": "Deny", "cancel": "Cancel"}
_DONE = {"approve": "Approved", "deny": "Denied", "cancel": "Cancelled"}
_BODY_TIMEOUT = 30.0

_CSS = """
:root{color-scheme:light dark;--jp-content-font-color1:#1f2328;--jp-content-font-color2:#59636e;
--jp-layout-color0:#fff;--jp-layout-color1:#fff;--jp-layout-color2:#f3f4f6;--jp-border-color1:#c8ccd1;
--jp-border-color2:#d8dde3;--jp-warn-color0:#9a5b00;--jp-success-color0:#1a7f37;--jp-error-color0:#c62828;
--jp-error-color1:#c62828;--jp-brand-color1:#0b62c4}
@media (prefers-color-scheme:dark){:root{--jp-content-font-color1:#e6e8eb;--jp-content-font-color2:#a3acb7;
--jp-layout-color0:#16191d;--jp-layout-color1:#1d2126;--jp-layout-color2:#262b31;--jp-border-color1:#4a525c;
--jp-border-color2:#39414a;--jp-warn-color0:#e3a93b;--jp-success-color0:#4fbf67;--jp-error-color0:#ff7b72;
--jp-error-color1:#ff7b72;--jp-brand-color1:#6cb0ff}}
body{margin:0;padding:24px 16px;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:var(--jp-content-font-color1);background:var(--jp-layout-color2)}
main{max-width:40em;margin:0 auto;background:var(--jp-layout-color0);border:1px solid var(--jp-border-color2);
border-radius:10px;padding:20px 24px}
h1{font-size:1.25rem;margin:0 0 4px}
.meta{color:var(--jp-content-font-color2);font-size:90%;margin:0 0 16px}
.call{border-top:1px solid var(--jp-border-color2);padding:12px 0}
form{margin-top:12px;display:flex;flex-wrap:wrap;gap:8px;align-items:center}
label{flex-basis:100%;font-size:90%;color:var(--jp-content-font-color2)}
input[type=text]{flex:1 1 100%;font:inherit;padding:6px 8px;border-radius:6px;
border:1px solid var(--jp-border-color1);background:var(--jp-layout-color1);color:inherit}
button{font:inherit;font-weight:600;padding:8px 18px;border-radius:6px;border:1px solid transparent;
cursor:pointer}
.approve{background:#1a7f37;color:#fff}.deny{background:#c62828;color:#fff}
.cancel{background:transparent;color:inherit;border-color:var(--jp-border-color1)}
.note{padding:10px 12px;border-radius:6px;background:var(--jp-layout-color2)}
"""


def page(title: str, body_html: str, *, status: int = 200) -> HTMLResponse:
    """A whole page: `title` (escaped here) over `body_html` (already escaped by its builder)."""
    doc = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta name="referrer" content="no-referrer"><title>{esc(title)}</title><style>{_CSS}</style>'
        f"</head><body><main><h1>{esc(title)}</h1>{body_html}</main></body></html>"
    )
    return HTMLResponse(doc, status_code=status, headers=_HEADERS)


def _note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


class _AnswerPage:
    """The two endpoints of one agent's answer page."""

    def __init__(self, agent: Agent, links: AnswerLinks, answered_as: str, *, max_body_bytes: int) -> None:
        self.agent = agent
        self.links = links
        self.answered_as = answered_as
        self.max_body_bytes = max_body_bytes

    async def _waiting(self, snapshot_id: str) -> tuple[SessionSnapshot | None, list[InboxItem]]:
        """The paused snapshot and its rows, or no rows when it waits no more."""
        snap = await self.agent.get_snapshot(snapshot_id)  # a default past its deadline applies first
        store = self.agent.store
        if snap is None or store is None or snap.state is None:
            return snap, []
        if (snap.status or "completed") != "completed" or snap.finish_reason != "interrupted":
            return snap, []
        if await store.get_claim(snapshot_id) is not None:
            return snap, []  # answered (or being answered) already
        last = snap.state.messages[-1] if snap.state.messages else None
        if last is None or last.role != "model" or not last.interrupts():
            return snap, []
        return snap, PendingTurn(self.agent, snap, last).items

    def _refused(self, exc: LinkError) -> Response:
        if exc.expired:
            return page("This link has expired", _note(exc.message), status=410)
        return page("This link is not valid", _note(exc.message), status=403)

    def _answered(self, status: int = 200) -> Response:
        text = (
            "This request was already answered (here, in a notebook, or by its deadline). "
            "Nothing was changed."
        )
        return page("Already answered", _note(text), status=status)

    def _form(self, token: str, rows: list[InboxItem]) -> str:
        offered = [v for v in VERBS if all(v in verbs_for(r) for r in rows)]
        buttons = "".join(
            f'<button type="submit" name="action" value="{v}" class="{v}">{_LABELS[v]}</button>'
            for v in offered
        )
        reason = (
            '<label for="reason">Reason (optional; the assistant reads it)</label>'
            '<input type="text" id="reason" name="reason" maxlength="500" autocomplete="off">'
        )
        applies = "" if len(rows) == 1 else _note(f"Your answer applies to all {len(rows)} requests above.")
        return (
            f'{applies}<form method="post" action="">'
            f'<input type="hidden" name="token" value="{esc(token)}">{reason}{buttons}</form>'
        )

    def _summaries(self, snap: SessionSnapshot, rows: list[InboxItem], state: str = "waiting") -> str:
        who = f" · asked by {esc(snap.owner)}" if snap.owner else ""
        meta = f'<p class="meta">Agent {esc(self.agent.name)}{who}</p>'
        calls = "".join(
            f'<div class="call">{summary_html(r.summary, raw=False, state=state)}</div>' for r in rows
        )
        return meta + calls

    async def show(self, request: Request) -> Response:
        token = request.query_params.get("token", "")
        try:
            claim = self.links.verify(token, self.agent.name)
        except LinkError as exc:
            return self._refused(exc)
        snap, rows = await self._waiting(claim.snapshot_id)
        if snap is None:
            return page("Not found", _note("This request no longer exists."), status=404)
        if not rows:
            return self._answered()
        n = len(rows)
        title = "An agent is waiting for your answer" if n == 1 else f"An agent is waiting on {n} requests"
        return page(title, self._summaries(snap, rows) + self._form(token, rows))

    async def answer(self, request: Request) -> Response:
        kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            return page("Not sent", _note("Send the answer with the page's own buttons."), status=415)
        raw = await read_body(request, self.max_body_bytes, _BODY_TIMEOUT)
        try:
            fields = parse_qs(raw.decode("utf-8", "replace"), max_num_fields=8)
        except ValueError:  # more fields than the page's form has
            return page("Not sent", _note("Send the answer with the page's own buttons."), status=400)
        form = {k: v[0] for k, v in fields.items()}
        try:
            claim = self.links.verify(form.get("token", ""), self.agent.name)
        except LinkError as exc:
            return self._refused(exc)
        action = form.get("action", "")
        if action not in VERBS:
            return page("Not sent", _note("Choose Approve, Deny or Cancel."), status=400)
        verb: Verb = action  # type: ignore[assignment]  # checked just above
        reason = form.get("reason", "").strip()[:500] or None
        snap, rows = await self._waiting(claim.snapshot_id)
        if not rows or snap is None:
            return self._answered(status=409)
        try:
            answers = [(r, *quick_answer(r, verb, reason=reason)) for r in rows]
        except NbAgentsError as exc:
            return page("Not sent", _note(exc.message), status=400)
        [outcome] = await answer_items(answers, answered_by=self.answered_as)
        if outcome.error is not None:
            if isinstance(outcome.error, FailedPreconditionError):
                return self._answered(status=409)
            return page("Not sent", _note(outcome.error.message), status=400)
        res = outcome.response
        said = res.text if res is not None else ""
        went_on = f"The assistant went on (finished: {res.finish_reason})." if res is not None else ""
        body = _note(f"{_DONE[verb]}. {went_on}") + self._summaries(snap, rows, _DONE[verb].lower())
        if said:
            body += f'<p class="meta">The assistant wrote</p><p class="note">{esc(said)}</p>'
        return page(_DONE[verb], body)


def answer_routes(agent: Agent, path: str, *, max_body_bytes: int) -> list[BaseRoute]:
    """The answer page's routes for `agent` at `path` (none when its hook makes no links)."""
    found = links_of(agent.on_pause)
    if found is None:
        return []
    links, answered_as = found
    endpoints = _AnswerPage(agent, links, answered_as, max_body_bytes=max_body_bytes)
    return [
        Route(path + "/answer", endpoints.show, methods=["GET"]),
        Route(path + "/answer", endpoints.answer, methods=["POST"]),
    ]
