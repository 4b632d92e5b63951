"""The trust matrix's target: an agent behind a route, on a store, with a real ledger.

A `Target` is the attacked agent (`trust_app.make_agent`) reached through one
answer route: the chat that paused (``chat``), ``agent.run`` on the paused
snapshot (``run``), a connection (``connect``), a new chat on the session id (a
second tab, ``session``), a partial answer (``partial``), a fork (``fork``), the
inbox's batch (``inbox``: the listing's row, `nb_agents.inbox.answer_items`), the
answer page of a webhook's signed link (``link``: approve, deny or cancel only),
or a real ``nb-agents serve`` process through `nb_agents.remote_agent` (``http``,
and ``http-inbox``: its ``/pending`` listing, then the batch).
Its ledger is a file each tool run writes a line to before anything else, so
it is what ran; `Target.check_decided` holds every line against the audit.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edges.served import Served
from trust_app import make_agent, make_nested, read_ledger

import nb_agents as nba
from nb_agents.chat import AgentResponse
from nb_agents.inbox import answer_items
from nb_agents.interrupts import is_cancel
from nb_agents.nested import NestedInterrupt

HERE = Path(__file__).resolve().parent
STORES = ["memory", "sqlite", "postgres"]
LOCAL_ROUTES = ["chat", "run", "connect", "session", "partial", "fork", "inbox"]
DECIDERS = ("person", "rule", "expiry", "policy")


@dataclass
class Target:
    """The attacked agent, one route to it, and its ledger."""

    route: str
    agent: nba.Agent  # the agent on the store: audit, rules, forks (the server's own, over http)
    ledger: Path
    front: Any = None  # what a client talks to: the agent, or a RemoteAgent over http
    hook: Any = None  # the link route's webhook (its deliveries hold the answer links)
    page: Any = None  # the link route's answer page: an httpx client on the served app
    sessions: list[str] = field(default_factory=list)
    follow: Any = None  # the chat the route answered with: where the conversation goes on
    path: list[str] = field(default_factory=list)  # the sub-agents the attacked agent sits under

    def __post_init__(self) -> None:
        if self.front is None:
            self.front = self.agent

    async def send(self, text: str, chat: Any = None) -> tuple[Any, AgentResponse]:
        """Send `text` in a new chat, or going on from `chat` (as the route last answered it)."""
        if chat is not None and self.follow is not None:
            chat = self.follow
        chat = chat if chat is not None else self.front.chat()
        res = await chat.send(text)
        if res.session_id and res.session_id not in self.sessions:
            self.sessions.append(res.session_id)
        return chat, res

    async def answer(
        self,
        chat: Any,
        res: AgentResponse,
        *,
        respond: list[nba.Part] | None = None,
        restart: list[nba.Part] | None = None,
        retry: bool = False,
    ) -> str:
        """Send the answer by this target's route: its finish reason, or ``refused:<STATUS>``."""
        respond, restart = respond or [], restart or []
        resume = nba.ToolResume(respond=respond, restart=restart)
        if self.route in ("inbox", "http-inbox"):
            return await self._by_inbox(res, respond + restart, retry)
        if self.route == "link":
            return await self._by_link(res, respond + restart)
        try:
            if self.route in ("chat", "http"):
                out = await chat.resume(respond=respond, restart=restart, retry=retry)
            elif self.route == "partial":
                out = await chat.resume(respond=respond, restart=restart, retry=retry, partial=True)
            elif self.route == "session":
                self.follow = self.front.chat(session_id=res.session_id)
                out = await self.follow.resume(respond=respond, restart=restart, retry=retry)
            elif self.route == "fork":
                self.follow = await chat.fork()
                self.sessions.append(self.follow.session_id)
                out = await self.follow.resume(respond=respond, restart=restart, retry=retry)
            elif self.route == "run":
                inp = nba.AgentInput(resume=resume, retry=True if retry else None)
                got = await self.agent.run(inp, snapshot_id=res.snapshot_id)
                return _reason(got.finish_reason, got.error)
            elif self.route == "connect":
                async with self.agent.connect(snapshot_id=res.snapshot_id) as conn:
                    conn.send(nba.AgentInput(resume=resume, retry=True if retry else None))
                    got = await conn.output()
                return _reason(got.finish_reason, got.error)
            else:
                raise ValueError(self.route)
        except nba.AgentError as exc:
            return f"refused:{exc.status}"
        return _reason(out.finish_reason, None)

    async def _by_inbox(self, res: AgentResponse, parts: list[nba.Part], retry: bool) -> str:
        """Answer through the inbox: the listed turn's rows, sent as one batch."""
        if retry:
            raise ValueError("the inbox sends answers once; a retry goes through the chat")
        turns = [t for t in await self.front.pending() if t.snapshot_id == res.snapshot_id]
        if not turns:
            return "refused:NOT_LISTED"
        rows = {}
        for r in turns[0].items:
            # a sub-agent's question is answered through the top-level call that waits on it
            top = r.interrupt.top.tool_request if isinstance(r.interrupt, NestedInterrupt) else None
            rows[(top.name, top.ref) if top is not None else (r.tool, r.interrupt.ref)] = r
        batch = []
        for part in parts:
            call = part.tool_request or part.tool_response
            assert call is not None
            kind = "restart" if part.tool_request is not None else "respond"
            batch.append((rows[(call.name, call.ref)], kind, part))
        [outcome] = await answer_items(batch)
        if outcome.error is not None:
            return f"refused:{outcome.error.status}"
        assert outcome.response is not None
        self.follow = outcome.response.chat  # the conversation goes on from the answered turn
        return _reason(outcome.response.finish_reason, None)

    async def _by_link(self, res: AgentResponse, parts: list[nba.Part]) -> str:
        """Answer through the answer page of the pause's signed link (one verb for the pause)."""
        await self.hook.flush()
        links = [
            d.payload["answerUrl"] for d in self.hook.deliveries if d.payload["snapshotId"] == res.snapshot_id
        ]
        if not links:
            return "refused:NOT_LINKED"
        verbs = {_verb(p) for p in parts}
        if len(verbs) != 1 or None in verbs:
            raise ValueError(f"an answer link approves, denies or cancels; {parts} is none of these")
        token = links[-1].split("token=", 1)[1]
        got = await self.page.post(f"/{self.agent.name}/answer", data={"token": token, "action": verbs.pop()})
        if got.status_code == 409:
            return "refused:FAILED_PRECONDITION"
        if got.status_code != 200:
            return f"refused:HTTP_{got.status_code}"
        self.follow = self.front.chat(session_id=res.session_id)  # it goes on from the session's latest
        latest = await self.agent.get_snapshot(session_id=res.session_id)
        assert latest is not None
        return str(latest.finish_reason if latest.status == "completed" else latest.status)

    def runs(self) -> list[dict[str, Any]]:
        """What ran in this test's sessions (and their forks), oldest first."""
        mine = tuple(self.sessions)
        return [line for line in read_ledger(self.ledger) if str(line["session"]).startswith(mine)]

    async def decisions(self) -> list[nba.AuditRecord]:
        """The audit of this test's sessions and the sessions under them (forks, sub-agents)."""
        return [record for sid in await self._sessions_under() for record in await self.agent.audit(sid)]

    async def _sessions_under(self) -> list[str]:
        store = self.agent.store
        assert store is not None
        return [sid for sid in await store.session_ids() if sid.startswith(tuple(self.sessions))]

    async def rules(self) -> list[nba.SessionRule]:
        """The approval rules of this test's sessions and the sessions under them."""
        return [rule for sid in await self._sessions_under() for rule in await self.agent.rules(sid)]

    async def check_decided(self) -> None:
        """Every run in the ledger has its decision in the audit: a kind, and the exact input that ran."""
        for line in self.runs():
            records = await self.agent.audit(line["session"])
            found = [
                r
                for r in records
                if r.ref == line["ref"] and r.decision in DECIDERS and r.input == line["input"]
            ]
            assert found, f"{line} ran, and no decision in its session's audit let it: {records}"


def _verb(part: nba.Part) -> str | None:
    """The answer page's verb a part stands for: approve, deny, cancel (else None)."""
    meta = part.metadata or {}
    if part.tool_request is not None:
        resumed = meta.get("resumed")
        plain = (
            isinstance(resumed, dict) and resumed.get("toolApproved") is True and "replacedInput" not in meta
        )
        return "approve" if plain and not resumed.get("always") else None
    if is_cancel(part):
        return "cancel"
    out = part.tool_response.output if part.tool_response is not None else None
    return (
        "deny" if isinstance(out, dict) and str(out.get("error", "")).startswith("The user denied") else None
    )


def _reason(finish: str | None, error: Any) -> str:
    if finish == "failed" and error is not None:
        return f"refused:{error.status}"
    return str(finish)


def serve_trust(tmp: Path, kind: str, *, nested: bool) -> Iterator[tuple[Served, nba.Agent, Path]]:
    """Serve `trust_app` (the attacked agent, or `nested`: ``boss`` over it) on a `kind` store in `tmp`."""
    ledger = tmp / "ledger.jsonl"
    if kind == "postgres":
        import pg

        from nb_agents.stores.postgres import PostgresSessionStore

        db = pg.fresh_dsn()
        store: nba.SessionStore = PostgresSessionStore(db)
    else:
        db = str(tmp / "trust.db")
        store = nba.SqliteSessionStore(db)
    path = os.pathsep.join([str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")])
    env = {"NBA_TRUST_LEDGER": str(ledger), "NBA_TRUST_DB": db, "PYTHONPATH": path}
    if nested:
        env["NBA_TRUST_NESTED"] = "1"
    server = Served(tmp, target="trust_app:served", env=env)
    try:
        yield server, (make_nested if nested else make_agent)(store, ledger), ledger
    finally:
        server.stop()
        asyncio.run(store.aclose()) if hasattr(store, "aclose") else None
