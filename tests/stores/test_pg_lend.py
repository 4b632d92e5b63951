"""An answer's read of the pause, answered from the PostgreSQL store's own copy (issue 23).

`PostgresSessionStore.get_snapshot_to_claim` answers an answer's read of a row
this store wrote or read from its copy, and the claim claims only if the row is
still that copy (`stores/_pg_lend.py`). Here, on a real PostgreSQL: whatever a
second store on the same database (another process, as far as the first one
knows) does to the pause between the send and the answer (claims it, answers it
the same or another way, rewrites it as pending, expired, aborted or with
another interrupt, gives its session an owner, deletes it), the answer through
the first store ends exactly as an answer through a store without a copy (the
general path: read, decide, claim), and the tool runs as often.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pg
import pytest

import nb_agents as nba
from nb_agents.stores.base import ReadAgainError, ResumeClaim, now_iso
from nb_agents.testing import FunctionModel
from nb_agents.testing._store_samples import snap
from nb_agents.types import Message, SessionSnapshot

if not pg.in_ci():
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[postgres]')")
import psycopg  # noqa: E402

from nb_agents.stores.postgres import PostgresSessionStore  # noqa: E402

pytestmark = pytest.mark.anyio

Meddle = Callable[[PostgresSessionStore, str, str, str, nba.Part], Awaitable[None]]


def _agent(store: nba.SessionStore, ran: list[str]) -> nba.Agent:
    def model(req: nba.GenerateRequest) -> dict[str, Any] | str:
        if req.messages[-1].role == "tool":
            return "done"
        call = {"toolRequest": {"name": "transfer", "ref": "t1", "input": {"amount": 5}}}
        return {"message": {"role": "model", "content": [call]}, "finishReason": "stop"}

    @nba.tool(name="transfer")
    async def transfer(amount: int) -> str:
        ran.append(f"transfer {amount}")
        return "ok"

    return nba.define_agent(
        "bank", model=FunctionModel(model), tools=[transfer], store=store, use=[nba.middleware.ToolApproval()]
    )


def _rewrite(**update: Any) -> Meddle:
    """The second store rewrites the paused row (a writer this process does not know of)."""

    async def meddle(
        other: PostgresSessionStore, dsn: str, pause: str, session: str, approve: nba.Part
    ) -> None:
        def mutate(cur: SessionSnapshot | None) -> SessionSnapshot | None:
            if cur is None:
                return None  # a save of an id it never saw runs the mutator on None first
            fields = {k: (v(cur) if callable(v) else v) for k, v in update.items()}
            return cur.model_copy(update=fields)

        assert await other.save_snapshot(pause, mutate) is not None

    return meddle


async def _nothing(
    other: PostgresSessionStore, dsn: str, pause: str, session: str, approve: nba.Part
) -> None:
    pass


async def _answered_alike(
    other: PostgresSessionStore, dsn: str, pause: str, session: str, approve: nba.Part
) -> None:
    out = await _agent(other, []).invoke(nba.AgentInput(resume=nba.ToolResume(restart=[approve])), _at(pause))
    assert out.finish_reason == "stop"


async def _answered_otherwise(
    other: PostgresSessionStore, dsn: str, pause: str, session: str, approve: nba.Part
) -> None:
    no = nba.Part.model_validate({"toolResponse": {"name": "transfer", "ref": "t1", "output": "no"}})
    out = await _agent(other, []).invoke(nba.AgentInput(resume=nba.ToolResume(respond=[no])), _at(pause))
    assert out.finish_reason == "stop"


async def _claimed(
    other: PostgresSessionStore, dsn: str, pause: str, session: str, approve: nba.Part
) -> None:
    assert await other.claim_resume(pause, "another answer", "someone-else") is None


async def _owned(other: PostgresSessionStore, dsn: str, pause: str, session: str, approve: nba.Part) -> None:
    # a row of the session that names an owner: the session (which had none) is eve's from now on
    row = snap(f"{pause}-eve", session_id=session, parent_id=pause, created=9, agent="bank", owner="eve")
    await other.save_snapshot(row.snapshot_id, lambda cur: row)


async def _deleted(
    other: PostgresSessionStore, dsn: str, pause: str, session: str, approve: nba.Part
) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM nb_agents_snapshots WHERE snapshot_id = %s", (pause,))


def _other_interrupt(cur: SessionSnapshot) -> Any:
    assert cur.state is not None
    wire = cur.state.messages[-1].model_dump_json(by_alias=True).replace('"ref":"t1"', '"ref":"t2"')
    assert '"t2"' in wire
    return cur.state.model_copy(
        update={"messages": [*cur.state.messages[:-1], Message.model_validate_json(wire)]}
    )


def _old() -> str:
    return (datetime.now(UTC) - timedelta(hours=1)).isoformat().replace("+00:00", "Z")


MEDDLES: dict[str, Meddle] = {
    "nothing": _nothing,
    "answered alike": _answered_alike,
    "answered otherwise": _answered_otherwise,
    "claimed": _claimed,
    "rewritten pending": _rewrite(status="pending", heartbeat_at=lambda cur: now_iso()),
    "rewritten expired": _rewrite(status="pending", heartbeat_at=lambda cur: _old()),
    "rewritten aborted": _rewrite(status="aborted", finish_reason="aborted"),
    "rewritten failed": _rewrite(status="failed", finish_reason="failed"),
    "another interrupt": _rewrite(state=_other_interrupt),
    "owned by eve": _owned,
    "deleted": _deleted,
}
CONTEXTS: dict[str, dict[str, Any] | None] = {"in process": None, "as mallory": {"auth": {"uid": "mallory"}}}


def _at(snapshot_id: str) -> nba.AgentInit:
    return nba.AgentInit(snapshot_id=snapshot_id)


async def _cycle(
    dsn: str, meddle: Meddle, context: dict[str, Any] | None, *, copy: bool
) -> tuple[tuple[Any, ...], list[str]]:
    """Send through one store, let a second one meddle, answer: through the first (`copy`) or
    through a third that never saw the pause (today's path). The outcome (ids left out) and the
    tool's runs."""
    ran: list[str] = []
    async with PostgresSessionStore(dsn) as first, PostgresSessionStore(dsn) as second:
        res = await _agent(first, ran).chat().send("pay 5")
        assert res.finish_reason == "interrupted" and res.snapshot_id is not None
        pause, session = res.snapshot_id, res.session_id
        approve = res.interrupts[0].approve()
        await meddle(second, dsn, pause, session, approve)
        async with PostgresSessionStore(dsn) as third:
            answering = first if copy else third
            options = nba.CallOptions(context=context) if context is not None else nba.CallOptions()
            out = await _agent(answering, ran).invoke(
                nba.AgentInput(resume=nba.ToolResume(restart=[approve])), _at(pause), options=options
            )
    error = out.error
    said = None if error is None else (error.status, error.message.replace(pause, "<pause>"))
    if said is not None:
        said = (said[0], re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", said[1]))
    text = out.message.text if out.message is not None else None
    return (out.finish_reason, said, text), ran


@pytest.mark.parametrize("context", list(CONTEXTS), ids=list(CONTEXTS))
@pytest.mark.parametrize("meddled", list(MEDDLES), ids=list(MEDDLES))
async def test_an_answer_from_the_copy_ends_as_one_that_read_the_row(
    dsn: str, meddled: str, context: str
) -> None:
    meddle, ctx = MEDDLES[meddled], CONTEXTS[context]
    lent, lent_ran = await _cycle(dsn, meddle, ctx, copy=True)
    read, read_ran = await _cycle(dsn, meddle, ctx, copy=False)
    assert lent == read
    assert lent_ran == read_ran  # the send's pause runs nothing; the answer at most once
    if meddled == "nothing":
        assert lent[0] == "stop" and lent_ran == ["transfer 5"]
    refused = ("answered otherwise", "claimed", "rewritten pending", "another interrupt", "deleted")
    if meddled in refused or (meddled == "owned by eve" and context == "as mallory"):
        assert lent[0] == "failed" and lent_ran == [], lent


# -- the store itself ----------------------------------------------------------------------
async def test_a_claim_on_a_copy_that_no_longer_holds_writes_nothing_and_says_read_again(dsn: str) -> None:
    async with PostgresSessionStore(dsn) as first, PostgresSessionStore(dsn) as second:
        row = snap("p", agent="bank")
        await first.save_snapshot("p", lambda cur: row)
        lent = await first.get_snapshot_to_claim("p")
        assert lent is not None and lent.to_wire() == row.to_wire()
        await second.save_snapshot(
            "p", lambda cur: None if cur is None else cur.model_copy(update={"status": "failed"})
        )
        assert (
            got := await first.get_snapshot("p")
        ) is not None and got.status == "failed"  # reads never lag
        lent = await first.get_snapshot_to_claim("p")  # read again (`get_snapshot` saw it): a copy of that
        await second.save_snapshot(
            "p", lambda cur: None if cur is None else cur.model_copy(update={"status": "aborted"})
        )
        with pytest.raises(ReadAgainError):
            await first.claim_resume(
                "p", "d", "kid", pending=snap("kid", parent_id="p").model_copy(update={"status": "pending"})
            )
        assert await second.get_claim("p") is None and await second.get_snapshot("kid") is None
        again = await first.get_snapshot_to_claim("p")  # from the database now
        assert again is not None and again.status == "aborted"
        assert await first.claim_resume("p", "d", "kid") is None
        assert await second.get_claim("p") == ResumeClaim("d", "kid")


async def test_the_session_getting_an_owner_moves_the_copy(dsn: str) -> None:
    async with PostgresSessionStore(dsn) as first, PostgresSessionStore(dsn) as second:
        await first.save_snapshot("p", lambda cur: snap("p", agent="bank"))  # a session without owner
        lent = await first.get_snapshot_to_claim("p")
        assert lent is not None and lent.owner is None
        await second.save_snapshot("q", lambda cur: snap("q", parent_id="p", created=1, owner="eve"))
        with pytest.raises(ReadAgainError):
            await first.claim_resume("p", "d", "kid")
        again = await first.get_snapshot_to_claim("p")
        assert again is not None and again.owner == "eve"


async def test_only_settled_rows_are_answered_from_a_copy(dsn: str) -> None:
    async with PostgresSessionStore(dsn, heartbeat_timeout=60) as first, PostgresSessionStore(dsn) as second:
        old = _old()
        pending = snap("p").model_copy(
            update={"status": "pending", "finish_reason": None, "heartbeat_at": old}
        )
        await first.save_snapshot("p", lambda cur: pending)
        got = await first.get_snapshot_to_claim("p")
        assert got is not None and got.status == "expired"  # computed on the read, as `get_snapshot`
        await second.save_snapshot(
            "p", lambda cur: None if cur is None else cur.model_copy(update={"status": "aborted"})
        )
        got = await first.get_snapshot_to_claim("p")  # a pending row is never lent: read
        assert got is not None and got.status == "aborted"
        assert await first.claim_resume("p", "d", "kid") is None  # read, not lent: claimed as before
