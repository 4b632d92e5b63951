"""A turn's final row: what it records, and what happens when the store will not take it.

The final row of a turn holds its status, finish reason, error and state; for
a claimed resume it is fenced by the attempt's claim (a worker whose claim was
taken over cannot write), and it names the tools the attempt ran
(``tool_runs``), so a re-sent answer can be told what happened.

If the store refuses the write for another reason after tools ran (a value it
cannot encode, a moment of unavailability), the turn must not leave its claim
stuck: a small failed row saying so, with the store's status, is written in its
place (fenced the same way), so the same answer sent again replays that failure
instead of running the tools again, and an explicit retry can go on. Either
way the store's own error is raised, so the caller learns its real status and
message (``UNAVAILABLE: the session store is down``; over HTTP an error frame,
as Genkit's client expects), not a generic one. A store that takes no write at
all (it is down) writes no failed row either: the turn's pending row then
expires, and its claim can be taken over.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .._made import made
from ..errors import NbAgentsError, StaleClaimError
from ..stores.base import AuditRecord, Fence, SessionStore, now_iso
from ..types import AgentErrorInfo, FinishReason, SessionSnapshot, SessionState
from . import observe
from .audit import turn_audit
from .ownership import principal_of

if TYPE_CHECKING:
    from .turn import Turn

__all__ = ["RowFields", "write_row"]

log = logging.getLogger("nb_agents.engine")

RowFields = dict[str, Any]
"""The fields of a final row besides its status and state (ids, agent, owner, ...)."""

_ATTEMPT_FIELDS = ("tool_runs", "answer")


async def write_row(
    turn: Turn,
    status: str,
    finish: FinishReason,
    state: SessionState,
    error: AgentErrorInfo | None,
    *,
    audited: bool = True,
) -> str:
    """Write `turn`'s row, with its audit (unless not `audited`) and the per-session rules its
    answers made, in one write.

    The audit: the answers the turn ran on, what rules and policy decided, the rules it
    made. Returns ``"written"``, ``"aborted"`` (an abort came first and won) or
    ``"stale"`` (fenced out). A write the store refuses raises the store's error, once a
    failed row is recorded in its place if the store takes that (`_refused`).

    The row keeps ``tool_runs`` and ``answer`` unless it completes (then the abort that
    wins keeps them too).
    """
    inv, ctx, attempt = turn.inv, turn.ctx, turn.attempt
    store, snapshot_id = turn.store, turn.snapshot_id
    assert store is not None and inv.session is not None and snapshot_id is not None
    fields: RowFields = {
        "session_id": inv.session.session_id,
        "parent_id": inv.parent_id,
        "agent": inv.spec.name,
        "owner": inv.owner,
        "timing": observe.timing(ctx),  # when it ran, and its steps (`notebook.Timeline`)
    }
    # kept unless the row completes (an abort that wins over the completion keeps them)
    if ctx is not None and ctx.tool_runs:
        fields["tool_runs"] = list(ctx.tool_runs)
    if turn.answering and turn.inp.resume is not None:
        # what an explicit retry sends again; and the mark of an answer's row, so that an answer
        # given through it is claimed on the pause it answered (`loading.answered_pause`)
        fields["answer"] = turn.inp.resume.to_wire()
    resume = turn.inp.resume if inv.parent_id is not None else None
    decisions = ctx.decisions if ctx is not None else []
    new_rules = ctx.new_rules if ctx is not None else []
    audit: list[AuditRecord] = []
    if audited and (resume is not None or decisions or new_rules):  # else no clock read for it
        audit = turn_audit(
            inv.session.session_id,
            resume,
            inv.parent_id,
            snapshot_id,
            principal=principal_of(inv.options.context),
            decisions=decisions,
            new_rules=new_rules,
            requested_by=inv.owner,
        )
    fence = attempt if attempt is not None and attempt.child_id == snapshot_id else None
    # only what is given: a turn that answered nothing works with stores written before `audit=` too;
    # the rules the turn's answers made are kept when its answers are recorded
    given = {"audit": audit, "fence": fence, "add_rules": new_rules if audit else ()}
    extra: dict[str, Any] = {k: v for k, v in given.items() if v}
    aborted = False

    def mutate(cur: SessionSnapshot | None) -> SessionSnapshot:
        nonlocal aborted
        now = now_iso()
        aborted = cur is not None and cur.status in ("aborted", "aborting")
        if aborted:
            assert cur is not None
            # abort wins the race (Genkit's rule), also over a turn that had just completed:
            # the row keeps the last good state and what the attempt's tools did
            update = {"status": "aborted", "finish_reason": "aborted", "state": state, "updated_at": now}
            update.update({k: v for k, v in fields.items() if k in _ATTEMPT_FIELDS and v})
            return cur.model_copy(update=update)
        kept = (
            fields if status != "completed" else {k: v for k, v in fields.items() if k not in _ATTEMPT_FIELDS}
        )
        row = {
            "snapshot_id": snapshot_id,
            "created_at": cur.created_at if cur is not None and cur.created_at else now,
            "updated_at": now,
            "status": status,
            "finish_reason": finish,
            "error": error,
            "state": state,
            **kept,
        }
        return made(SessionSnapshot, row)  # the engine's own values: not validated again

    try:
        await store.save_snapshot(snapshot_id, mutate, **extra)
        return "aborted" if aborted else "written"
    except StaleClaimError:
        log.warning("turn %s lost its claim to a takeover; its result is dropped", snapshot_id)
        return "stale"
    except Exception as exc:  # noqa: BLE001 - recorded, then raised: the claim must not stay stuck
        return await _refused(store, snapshot_id, fields, fence, exc)


async def _refused(
    store: SessionStore, snapshot_id: str, fields: RowFields, fence: Fence | None, first: Exception
) -> str:
    """The store refused the turn's row with `first`: record a small failed row in its place
    (fenced the same way), then raise `first`; ``"stale"`` if fenced out meanwhile."""
    log.error("the final row of turn %s could not be written", snapshot_id, exc_info=first)
    said = first.message if isinstance(first, NbAgentsError) else f"{type(first).__name__}: {first}"
    reason = AgentErrorInfo(
        status=first.status if isinstance(first, NbAgentsError) else "INTERNAL",
        message=f"the turn ran but its result could not be stored: {said}",
        details={"type": type(first).__name__, "public": "the turn ran but its result could not be stored"},
    )

    def failed(cur: SessionSnapshot | None) -> SessionSnapshot:
        now = now_iso()
        keep = {k: v for k, v in fields.items() if k != "tool_runs"}  # possibly what would not encode
        return SessionSnapshot(
            snapshot_id=snapshot_id,
            created_at=cur.created_at if cur is not None and cur.created_at else now,
            updated_at=now,
            status="failed",
            finish_reason="failed",
            error=reason,
            **keep,
        )

    try:
        fenced: dict[str, Any] = {"fence": fence} if fence is not None else {}
        await store.save_snapshot(snapshot_id, failed, **fenced)
    except StaleClaimError:
        return "stale"
    except Exception:  # noqa: BLE001 - the first error is raised, below
        # the store takes nothing (it is down): the pending row expires, and then the claim
        # can be taken over
        log.warning(
            "turn %s could not record its failure either; its claim expires with its row", snapshot_id
        )
    raise first  # as the store said it: its status and message reach the caller
