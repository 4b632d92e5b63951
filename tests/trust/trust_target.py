"""The trust matrix's target: an agent behind a route, on a store, with a real ledger.

A `Target` is the attacked agent (`trust_app.make_agent`) reached through one
answer route: the chat that paused (``chat``), ``agent.run`` on the paused
snapshot (``run``), a connection (``connect``), a new chat on the session id (a
second tab, ``session``), a partial answer (``partial``), a fork (``fork``), or
a real ``nb-agents serve`` process through `nb_agents.remote_agent` (``http``).
Its ledger is a file each tool run writes a line to before anything else, so
it is what ran; `Target.check_decided` holds every line against the audit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trust_app import read_ledger

import nb_agents as nba
from nb_agents.chat import AgentResponse

STORES = ["memory", "sqlite", "postgres"]
LOCAL_ROUTES = ["chat", "run", "connect", "session", "partial", "fork"]
DECIDERS = ("person", "rule", "expiry", "policy")


@dataclass
class Target:
    """The attacked agent, one route to it, and its ledger."""

    route: str
    agent: nba.Agent  # the agent on the store: audit, rules, forks (the server's own, over http)
    ledger: Path
    front: Any = None  # what a client talks to: the agent, or a RemoteAgent over http
    sessions: list[str] = field(default_factory=list)
    follow: Any = None  # the chat the route answered with: where the conversation goes on

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

    def runs(self) -> list[dict[str, Any]]:
        """What ran in this test's sessions (and their forks), oldest first."""
        mine = tuple(self.sessions)
        return [line for line in read_ledger(self.ledger) if str(line["session"]).startswith(mine)]

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


def _reason(finish: str | None, error: Any) -> str:
    if finish == "failed" and error is not None:
        return f"refused:{error.status}"
    return str(finish)
