"""The values the store conformance suite writes: snapshots, messages, audit records.

Plain builders (no assertions), shared by the check modules and nb_agents's own
store tests, and `close_store`.
"""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta
from typing import Any

from ..stores.base import AuditRecord, SessionStore
from ..types import Message, SessionSnapshot, SessionState

__all__ = ["RICH", "answer", "close_store", "msg", "put", "snap", "ts"]

# A snapshot with every field set, and fields and values nb_agents does not know.
RICH: dict[str, Any] = {
    "snapshotId": "snap-1",
    "sessionId": "sess-1",
    "parentId": "snap-0",
    "createdAt": "2026-01-01T00:00:00.000Z",
    "updatedAt": "2026-01-01T00:00:01.000Z",
    "status": "completed",
    "finishReason": "interrupted",
    "futureField": {"kept": [1, 2.5, True, None]},
    "state": {
        "sessionId": "sess-1",
        "custom": {"count": 3, "nested": {"x": [1, "ünïcode ✓"]}},
        "artifacts": [{"name": "report", "parts": [{"text": "draft"}], "metadata": {"v": 1}}],
        "stateExtra": "kept too",
        "messages": [
            {"role": "user", "content": [{"text": "transfer $5"}]},
            {
                "role": "model",
                "content": [
                    {"text": "Let me check."},
                    {
                        "toolRequest": {"name": "userApproval", "ref": "b2", "input": {"amount": 5}},
                        "metadata": {"interrupt": {"why": "approve"}},
                    },
                ],
                "metadata": {"custom": 1},
                "messageExtra": True,
            },
        ],
    },
}


def ts(seconds: int) -> str:
    """``2026-01-01T00:00:00.000Z`` plus `seconds`, as nb_agents writes times."""
    moment = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def msg(role: str, text: str) -> Message:
    """A one-part text message."""
    return Message.model_validate({"role": role, "content": [{"text": text}]})


def snap(
    snapshot_id: str,
    *,
    session_id: str = "s1",
    parent_id: str | None = None,
    created: int = 0,
    messages: list[Message] | None = None,
    **extra: Any,
) -> SessionSnapshot:
    """A completed snapshot created `created` seconds after `ts(0)`."""
    return SessionSnapshot(
        snapshot_id=snapshot_id,
        session_id=session_id,
        parent_id=parent_id,
        created_at=ts(created),
        updated_at=ts(created),
        status="completed",
        finish_reason="stop",
        state=SessionState(session_id=session_id, messages=messages or [msg("user", "hi")]),
        **extra,
    )


async def put(store: SessionStore, value: SessionSnapshot) -> None:
    """Save `value` as its row, whatever the row held."""
    await store.save_snapshot(value.snapshot_id, lambda cur: value)


def answer(i: int, session_id: str = "s1", snapshot_id: str = "root", child_id: str = "kid") -> AuditRecord:
    """The audit record of a restart of tool call ``t<i>``."""
    return AuditRecord(
        session_id, snapshot_id, child_id, "transfer", f"t{i}", "restart", {"ok": i}, None, ts(i)
    )


async def close_store(store: object) -> None:
    """The store's ``aclose()``, else its ``close()``, if it has either."""
    for name in ("aclose", "close"):
        method = getattr(store, name, None)
        if callable(method):
            result = method()
            if inspect.isawaitable(result):
                await result
            return
