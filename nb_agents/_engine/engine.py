"""`Engine`: the engine's one door. Every verb of an agent is one call here.

`nb_agents.Agent` holds an `Engine` and adds only what a facade adds (its
docstrings, `Chat` objects, table-rendering lists); the HTTP server and
`AgentConnection` open invocations through `Engine.open`. Behind the door:
`Invocation` and its `Turn` (check → decide → claim → run → record), the
exactly-once claim, the decision step, deadlines, forks, rules, the audit.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, TypedDict, Unpack

from ..errors import FailedPreconditionError, InvalidArgumentError
from ..rules import SessionRule
from ..stores.base import AuditRecord, SessionStore, now_iso
from ..types import AgentInit, AgentInput, AgentOutput, CallOptions, ChunkSink, Message, SessionSnapshot
from .expiry import due_parts, has_deadline
from .forking import fork_snapshot, forks_of
from .invocation import Invocation, expire
from .limits import check_id
from .loading import walk_back
from .ownership import Action, visible
from .session_rules import revoke_session_rule, session_rules
from .spec import AgentSpec

__all__ = ["Engine", "How", "Waiting"]


class How(TypedDict, total=False):
    """How an invocation runs (`Invocation`'s keywords): call options, where chunks go, what aborts it."""

    options: CallOptions
    on_chunk: ChunkSink | None
    abort_signal: asyncio.Event | None


Waiting = tuple[SessionSnapshot, Message, SessionSnapshot | None]
"""A paused turn as `Engine.pending` finds it: the paused snapshot, the message that asks, and
the attempt of an answer that failed or was aborted after its tools started (else None)."""


class Engine:
    """An agent's engine (see the module docstring)."""

    def __init__(self, spec: AgentSpec) -> None:
        self.spec = spec

    @property
    def store(self) -> SessionStore | None:
        return self.spec.store

    def use_store(self, store: SessionStore | None) -> None:
        """Replace the store (turns already running keep theirs)."""
        self.spec = replace(self.spec, store=store)

    def _store(self, verb: str) -> SessionStore:
        if self.spec.store is None:
            raise FailedPreconditionError(
                f"agent '{self.spec.name}' has no store configured (client-managed state); {verb} needs one"
            )
        return self.spec.store

    def _may(self, snap: SessionSnapshot | None, context: dict[str, Any] | None, action: Action) -> bool:
        return snap is not None and visible(
            snap, agent=self.spec.name, context=context, action=action, authorize=self.spec.authorize
        )

    # -- turns --------------------------------------------------------------------------
    async def invoke(self, inp: AgentInput, init: AgentInit, **how: Unpack[How]) -> AgentOutput:
        """Run one input as a one-shot invocation in the caller's task; a failed turn is returned in-band."""
        inv = Invocation(self.spec, init, start=False, **how)
        if not inp.detach:
            return await inv.run_one(inp)
        inv.send(inp)  # a detach goes on in a task of its own
        return await inv.run_inline()

    def open(self, init: AgentInit | None = None, *, start: bool = True, **how: Unpack[How]) -> Invocation:
        """An invocation to feed inputs to (`send`, `close`, `output`): servers and connections."""
        return Invocation(self.spec, init or AgentInit(), start=start, **how)

    # -- snapshots ----------------------------------------------------------------------
    async def get_snapshot(
        self, snapshot_id: str | None, session_id: str | None, context: dict[str, Any] | None
    ) -> SessionSnapshot | None:
        """A snapshot by id, or a session's latest; None if unknown or not the caller's to read.

        A pause past its deadline is read as its default left it (the default applies first).
        """
        store = self._store("get_snapshot")
        if (snapshot_id is None) == (session_id is None):
            raise InvalidArgumentError("get_snapshot needs exactly one of snapshot_id and session_id")
        check_id(snapshot_id, "snapshot_id")
        check_id(session_id, "session_id")
        snap = await (
            store.get_snapshot(snapshot_id) if snapshot_id is not None else store.get_latest(session_id or "")
        )
        if not self._may(snap, context, "read"):
            return None
        assert snap is not None
        if await self.expire(snap) is not None and session_id is not None:
            snap = await store.get_latest(session_id)  # the session went on from the default
        return snap

    async def expire(self, snap: SessionSnapshot) -> AgentOutput | None:
        """Apply the defaults of `snap`'s pauses past their deadline (once, whoever reads first).

        The turn the defaults ran, or None when none was due or an answer given in time holds the pause.
        """
        if snap.state is None or not has_deadline(snap.state.messages) or not due_parts(snap.state.messages):
            return None
        expired = await expire(self.spec, snap)
        return expired.output if expired is not None and not expired.preempted else None

    async def expire_due(self) -> list[AgentOutput]:
        """Apply the default of every pause of this agent past its deadline; the turns it ran."""
        store = self._store("expire_due")
        outs: list[AgentOutput] = []
        for sid in await store.session_ids():
            leaf = await self._settled_leaf(store, sid)
            if leaf is not None and (leaf.agent is None or leaf.agent == self.spec.name):
                out = await self.expire(leaf)
                if out is not None:
                    outs.append(out)
        return outs

    @staticmethod
    async def _settled_leaf(
        store: SessionStore, session_id: str, leaf: SessionSnapshot | None = None
    ) -> SessionSnapshot | None:
        """The session's leaf, or, while a turn of it runs, the snapshot that turn continues.

        A default being applied by another process is such a turn: expiring the
        pause it answers then waits for that turn (the claim's replay), so every
        reader that noticed the deadline sees the one turn the default ran.
        """
        leaf = leaf if leaf is not None else await store.get_latest(session_id)
        if leaf is None or leaf.status not in ("pending", "aborting"):
            return leaf
        return await walk_back(store, session_id, leaf) or leaf

    async def abort(self, snapshot_id: str, context: dict[str, Any] | None) -> str | None:
        """Abort a pending snapshot; its previous status (None: unknown, or not the caller's)."""
        store = self._store("abort")
        check_id(snapshot_id, "snapshot_id")
        current = await store.get_snapshot(snapshot_id)
        if context is not None and not self._may(current, context, "abort"):
            return None
        previous: str | None = None

        def mutate(cur: SessionSnapshot | None) -> SessionSnapshot | None:
            nonlocal previous
            if cur is None:
                return None
            previous = cur.status or "completed"
            if cur.status != "pending":
                return None
            return cur.model_copy(update={"status": "aborted", "updated_at": now_iso()})

        await store.save_snapshot(snapshot_id, mutate)
        if previous == "pending" and current is not None and current.status == "expired":
            previous = "expired"
        return previous

    # -- listings -----------------------------------------------------------------------
    async def pending(self, context: dict[str, Any] | None) -> list[Waiting]:
        """The paused turns of this agent the caller may answer, oldest first (see `Waiting`)."""
        store = self._store("pending")
        out: list[Waiting] = []
        for sid in await store.session_ids():
            leaf = await store.get_latest(sid)
            if leaf is not None and leaf.status == "completed" and leaf.finish_reason != "interrupted":
                continue  # settled and not paused: the cheap common case
            settled = await self._settled_leaf(store, sid, leaf) if leaf is not None else None
            if settled is not None and self._may(settled, context, "read") and await self.expire(settled):
                leaf = await store.get_latest(sid)  # past its deadline: listed as the default left it
            attempt = None
            snap = leaf
            if leaf is not None and leaf.status in ("failed", "aborted") and leaf.answer and leaf.parent_id:
                attempt, snap = leaf, await store.get_snapshot(leaf.parent_id)  # an answer that failed
            if snap is None or snap.status != "completed" or snap.finish_reason != "interrupted":
                continue
            if not self._may(snap, context, "resume"):
                continue
            msgs = snap.state.messages if snap.state is not None else []
            if msgs and msgs[-1].role == "model" and msgs[-1].interrupts():
                out.append((snap, msgs[-1], attempt))
        out.sort(key=lambda w: w[0].updated_at or "")
        return out

    async def audit(self, session_id: str, context: dict[str, Any] | None) -> list[AuditRecord]:
        """A session's audit records, oldest first; none for a session the caller may not read."""
        store = self._store("audit")
        if context is not None and not self._may(await store.get_latest(session_id), context, "read"):
            return []
        return await store.audit(session_id)

    async def rules(self, session_id: str, context: dict[str, Any] | None) -> list[SessionRule]:
        """The session's approval rules, oldest first."""
        return await session_rules(self.spec, self._store("rules"), session_id, context)

    async def revoke_rule(self, session_id: str, rule_id: str, context: dict[str, Any] | None) -> SessionRule:
        """Revoke a per-session rule, audited in the same write."""
        return await revoke_session_rule(self.spec, self._store("revoke_rule"), session_id, rule_id, context)

    async def fork(
        self, snapshot_id: str | None, session_id: str | None, key: str | None, context: dict[str, Any] | None
    ) -> SessionSnapshot:
        """Copy a paused turn into a fork of its own; the fork's first row."""
        return await fork_snapshot(self.spec, snapshot_id, session_id=session_id, key=key, context=context)

    async def forks(self, session_id: str, context: dict[str, Any] | None) -> list[SessionSnapshot]:
        """The first rows of the forks made from a session's snapshots, oldest first."""
        self._store("forks")
        return await forks_of(self.spec, session_id, context=context)
