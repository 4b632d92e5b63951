"""The compact values of SQLite rows read back exactly, whatever the input."""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from nb_agents.stores._sqlite_codec import (
    decode_digest,
    decode_id,
    decode_time,
    encode_digest,
    encode_id,
    encode_time,
    pack_audit,
    pack_row,
    pack_tail,
    unpack_audit,
    unpack_meta,
    unpack_state,
    unpack_tail,
)
from nb_agents.stores.base import AuditRecord, now_iso
from nb_agents.types import Message, SessionSnapshot, SessionState

UUID = "8a3f2c3e-5b1d-4c0e-9f1a-2b3c4d5e6f70"


@pytest.mark.parametrize(
    "value",
    [
        UUID,
        str(uuid.uuid4()),
        "00000000-0000-0000-0000-000000000000",
        UUID.upper(),
        UUID.replace("-", ""),
        "{" + UUID + "}",
        "urn:uuid:" + UUID,
        "8a3f2c3e-5b1d-4c0e-9f1a-2b3c4d5e6f7g",
        "8a3f2c3e_5b1d-4c0e-9f1a-2b3c4d5e6f70",
        "8a3f2c3e-5b1d-4c0e-9f1a-2b3c4d5e6f 0",
        "",
        "alice",
        "ünïcode 😀 \ud800",
        "x" * 36,
    ],
)
def test_ids_read_back_exactly(value: str) -> None:
    stored = encode_id(value)
    assert decode_id(stored) == value
    canonical = _is_canonical_uuid(value)
    assert isinstance(stored, bytes) == canonical
    if canonical:
        assert len(stored) == 16


def _is_canonical_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


@pytest.mark.parametrize(
    ("value", "compact"),
    [
        ("2026-11-30T14:01:50.043Z", True),
        ("1970-01-01T00:00:00.000Z", True),
        ("1969-12-31T23:59:59.999Z", True),
        ("0001-01-01T00:00:00.000Z", True),
        ("9999-12-31T23:59:59.999Z", True),
        ("2026-11-30T14:01:50Z", False),
        ("2026-11-30T14:01:50.043000Z", False),
        ("2026-11-30T14:01:50.043+00:00", False),
        ("2026-11-30 14:01:50.043Z", False),
        ("2026-02-30T14:01:50.043Z", False),
        ("2026-11-30T14:01:50,043Z", False),
        ("not a time at all, 24 ch", False),
        ("", False),
    ],
)
def test_times_read_back_exactly(value: str, compact: bool) -> None:
    stored = encode_time(value)
    assert isinstance(stored, int) == compact
    assert decode_time(stored) == value
    assert encode_time(None) is None and decode_time(None) is None


def test_the_time_a_row_is_stamped_with_is_now_and_stored_compactly() -> None:
    """`now_iso` keeps the text of the last millisecond asked for: it still tells the time."""
    stamps = []
    for _ in range(3):
        before = datetime.now(UTC)
        stamp = now_iso()
        after = datetime.now(UTC)
        stamps.append(stamp)
        at = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= at <= after
        assert isinstance(encode_time(stamp), int) and decode_time(encode_time(stamp)) == stamp
        time.sleep(0.003)
    assert stamps == sorted(stamps) and len(set(stamps)) == 3


def test_digests_read_back_exactly() -> None:
    hexdigest = "ab" * 32
    assert encode_digest(hexdigest) == bytes.fromhex(hexdigest)
    for value in (hexdigest, hexdigest.upper(), "digest-1", "zz" * 32, ""):
        assert decode_digest(encode_digest(value)) == value


def _meta_round_trip(snap: SessionSnapshot) -> dict[str, Any]:
    wire = unpack_meta(*pack_row(snap, None, in_session=False)[0][:3])
    wire["snapshotId"] = snap.snapshot_id
    return SessionSnapshot.model_validate(wire).to_wire()


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.005Z"},
        {"createdAt": "2026-01-01T00:00:01.000Z", "updatedAt": "2026-01-01T00:00:00.000Z"},  # before
        {"createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:01.000Z"},
        {"updatedAt": "2026-01-01T00:00:01.000Z"},
        {"createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z"},
        {"status": "pending", "heartbeatAt": "2026-01-01T00:00:00.000Z"},
        {"status": "failed", "finishReason": "failed", "error": {"status": "INTERNAL", "message": "boom"}},
        {"status": "aborting", "finishReason": "detached", "futureField": [1, {"x": None}]},
        {"status": "expired", "finishReason": "unknown", "createdAt": "2026-01-01T00:00:00.000Z"},
    ],
)
def test_snapshot_metadata_reads_back_exactly(fields: dict[str, Any]) -> None:
    snap = SessionSnapshot.model_validate({"snapshotId": "s", **fields})
    assert _meta_round_trip(snap) == snap.to_wire()


@pytest.mark.parametrize("row_session", ["s1", None])
@pytest.mark.parametrize(
    "state",
    [
        {"sessionId": "s1", "artifacts": []},
        {"sessionId": "other", "custom": {"n": 1}},
        {"custom": None},
        {},
        {"artifacts": [{"name": "a", "parts": [{"text": "x"}]}], "extraKey": True},
        {"sessionId": "s1", "custom": [1, "two"], "artifacts": [], "messages": []},
    ],
)
def test_states_read_back_exactly(state: dict[str, Any], row_session: str | None) -> None:
    value = SessionState.model_validate(state)
    row = SessionSnapshot(snapshot_id="s", session_id=row_session, state=value)
    stored = pack_row(row, None, in_session=row_session is not None)[0][3]
    assert stored is not None
    back = SessionState.model_validate(unpack_state(stored, row_session))
    expected = value.to_wire()
    expected.pop("messages", None)  # the tail holds them
    assert back.to_wire() == expected


def _messages(*texts: str) -> list[Message]:
    return [Message.model_validate({"role": "user", "content": [{"text": t}]}) for t in texts]


@pytest.mark.parametrize(
    "messages",
    [
        [],
        _messages("hi"),
        _messages(*(f"turn {i}: the balance covers the transfer" for i in range(20))),
        _messages("lone \ud800 surrogate, NUL \x00, emoji 😀", "ünïcode " * 40),
        [
            Message.model_validate(
                {
                    "role": "model",
                    "content": [{"toolRequest": {"name": "t", "ref": "1", "input": {"n": 1.5, "b": True}}}],
                    "metadata": {"interrupt": {"message": "approve?"}},
                    "futureField": {"kept": None},
                }
            )
        ],
    ],
)
def test_tails_read_back_exactly(messages: list[Message]) -> None:
    stored = pack_tail(messages)
    assert [m.to_wire() for m in unpack_tail(stored)] == [m.to_wire() for m in messages]


def test_tails_are_deflated_only_when_that_is_smaller() -> None:
    assert pack_tail([]) == "[]"
    long = _messages(*(f"turn {i}: the balance covers the transfer" for i in range(20)))
    stored = pack_tail(long)
    as_json = len(json.dumps([m.to_wire() for m in long], separators=(",", ":")))
    assert isinstance(stored, bytes) and len(stored) < as_json / 4


@pytest.mark.parametrize(
    "record",
    [
        AuditRecord(
            "s",
            "a",
            "b",
            "transfer",
            "t1",
            "restart",
            {"toolApproved": True},
            None,
            "2026-01-01T00:00:00.000Z",
        ),
        AuditRecord(
            "s", "a", "b", "ask", None, "respond", None, {"to": "bob"}, "2026-01-01T00:00:00Z", "ann"
        ),
        AuditRecord("s", "a", "b", "ask", "r", "some-new-kind", [1, "x"], None, "not a time"),
        AuditRecord(
            "s", "a", "b", "ask", "r", "respond", "lone \ud800", None, "2026-01-01T00:00:00.000Z", None
        ),
    ],
)
def test_audit_records_read_back_exactly(record: AuditRecord) -> None:
    assert unpack_audit(pack_audit(record), "s", "a", "b") == record
