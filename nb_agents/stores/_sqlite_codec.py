"""The compact values of `SqliteSessionStore`'s rows (pure, no I/O).

A row keeps only what no column already says, in the smallest form that reads
back exactly (``to_wire()`` equal, unknown fields included):

* ids: a canonical (lowercase, hyphenated) UUID is a 16-byte blob, any other
  string stays text; SQLite never finds a blob equal to a text, so both live in
  one column and one index;
* times: ``2026-01-01T00:00:00.000Z`` (what nb_agents writes) is an integer of
  milliseconds since the epoch, any other string stays text;
* status, finish reason and ``updatedAt`` (as milliseconds after
  ``createdAt``) pack into one small integer; whatever else a snapshot holds
  (``heartbeatAt``, ``error``, unknown fields) is JSON, or NULL when nothing;
* a state drops its messages (the tail holds them), the session id when it is
  the row's, and ``artifacts`` when it is the usual empty list;
* a tail (the messages a row adds to its base) is JSON, raw-deflated
  against `_ZDICT` (a blob) when that is smaller, else kept as text;
* agent and owner are columns of the session (`._sqlite_schema`): a row in a
  session leaves them out of its JSON;
* an audit record is a JSON array without its ids (columns hold them).

Changing any encoding here, `_ZDICT` included, changes what stored bytes mean:
bump ``SCHEMA_VERSION`` in `._sqlite_schema` with it (and migrate, or read both).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from ..types import Message, SessionSnapshot, SessionState
from ._delta import load_messages, messages_json, shared_prefix, to_json
from .base import AuditRecord

__all__ = [
    "Id",
    "Ref",
    "decode_digest",
    "decode_id",
    "decode_time",
    "encode_digest",
    "encode_id",
    "encode_time",
    "Packed",
    "pack_audit",
    "pack_row",
    "pack_tail",
    "ref_id",
    "unpack_audit",
    "unpack_meta",
    "unpack_row",
    "unpack_state",
    "unpack_tail",
]

Id = str | bytes  # an id as stored: text, or a UUID's 16 bytes
Ref = int | Id  # a snapshot as referenced: its row's seq, or its encoded id when it has no row

# A row as read (`._sqlite_rows.BY_ID`): its columns ``seq, rev, base_len, tail, state,
# created, kind, meta, id, session, parent``, then the parent's id, the session's id,
# agent and owner; `unpack_row` reads these.
_TAIL, _STATE, _CREATED, _KIND, _META, _ID, _PARENT, _PARENT_ID, _SESSION_ID, _AGENT, _OWNER = (
    3,
    4,
    5,
    6,
    7,
    8,
    10,
    11,
    12,
    13,
    14,
)

_EPOCH = datetime(1970, 1, 1)  # naive: stored times are UTC
_MS = timedelta(milliseconds=1)
_STATUS = (None, "pending", "completed", "failed", "aborting", "aborted", "expired")
_FINISH = (
    None,
    "stop",
    "length",
    "blocked",
    "interrupted",
    "other",
    "unknown",
    "aborted",
    "detached",
    "failed",
)
_STATUS_CODE = {s: i for i, s in enumerate(_STATUS)}
_FINISH_CODE = {f: i for i, f in enumerate(_FINISH)}
_KINDS = ("respond", "restart")
_SNAPSHOT_COLUMNS = {"snapshot_id", "session_id", "parent_id", "state"}
_SESSION_COLUMNS = {*_SNAPSHOT_COLUMNS, "agent", "owner"}
_CODED = (("status", _STATUS_CODE, 1), ("finishReason", _FINISH_CODE, 8))

# Raw deflate (no header, no checksum) with a 4 KiB window; the preset dictionary
# holds the JSON that Genkit messages repeat, the most frequent last.
_WBITS = -12
_MEMLEVEL = 4
_ZDICT = (
    b'"contentType":"application/json"{"media":{"url":"data:image/png;base64,"reasoning":"'
    b'{"data":{"custom":{"finishReason":"stop""usage":{"inputTokens":"outputTokens":'
    b'"replacedInput":{"toolApproved":true}"resumed":{"toolApproved":true}},"metadata":{"resumed":true}}'
    b'"metadata":{"interrupt":true}"metadata":{"interrupt":{"message":"'
    b'"metadata":{"resolvedInterrupt":{"message":"'
    b'{"role":"system","content":[{"text":"'
    b'{"role":"tool","content":[{"toolResponse":{"name":"'
    b'","ref":"","output":"ok"}}]}'
    b'{"role":"model","content":[{"toolRequest":{"name":"'
    b'","ref":"","input":{"'
    b'{"role":"model","content":[{"text":"'
    b'{"role":"user","content":[{"text":"'
)


# -- ids, times, digests --------------------------------------------------------------
def encode_id(value: str) -> Id:
    """A canonical UUID as its 16 bytes; any other id as itself.

    Example:
        >>> encode_id("8a3f2c3e-5b1d-4c0e-9f1a-2b3c4d5e6f70").hex()
        '8a3f2c3e5b1d4c0e9f1a2b3c4d5e6f70'
        >>> encode_id("alice")
        'alice'
    """
    if len(value) == 36 and value[8] == value[13] == value[18] == value[23] == "-":
        digits = value[:8] + value[9:13] + value[14:18] + value[19:23] + value[24:]
        try:
            raw = bytes.fromhex(digits)
        except ValueError:
            return value
        if len(raw) == 16 and raw.hex() == digits:  # lowercase hex only: `str(uuid.UUID(...))`
            return raw
    return value


def decode_id(value: Id) -> str:
    if isinstance(value, bytes):
        h = value.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return value


def encode_time(value: str | None) -> int | str | None:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ`` as milliseconds since the epoch; other strings as themselves."""
    if value is None or len(value) != 24 or value[-1] != "Z" or value[19] != ".":
        return value
    try:
        moment = datetime.fromisoformat(value[:-1])
    except ValueError:
        return value
    if moment.tzinfo is not None or moment.isoformat(timespec="milliseconds") != value[:-1]:
        return value
    return (moment - _EPOCH) // _MS


def decode_time(value: int | str | None) -> str | None:
    if isinstance(value, int):
        return (_EPOCH + value * _MS).isoformat(timespec="milliseconds") + "Z"
    return value


def encode_digest(value: str) -> Id:
    """A SHA-256 hex digest as its 32 bytes; anything else as itself."""
    if len(value) == 64:
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            return value
        if raw.hex() == value:
            return raw
    return value


def decode_digest(value: Id) -> str:
    return value.hex() if isinstance(value, bytes) else value


# -- a row ----------------------------------------------------------------------------
Packed = tuple[int | str | None, int, str | None, str | None, int | None, str | bytes | None]
"""A row's stored columns: ``(created, kind, meta, state, base_len, tail)``."""


def pack_row(
    snap: SessionSnapshot, base: Sequence[Message] | None, *, in_session: bool
) -> tuple[Packed, list[Message] | None]:
    """The columns that store `snap`, and its history (None without a state).

    * ``created``, ``kind``, ``meta``: the snapshot's fields that are not columns
      of their own (nor, `in_session`, of its session: agent and owner).
      ``kind`` is ``status + 8 * finish + 128 * (updated - created + 1)`` (the
      last term 0 when ``updatedAt`` is not a millisecond time at or after
      ``createdAt``); ``meta`` is JSON of the rest, or None.
    * ``state``: the state without its messages, its session id when it is the
      row's, and empty artifacts. What is left implicit is marked when it
      differs: ``"sessionId": null`` for a state without the row's session,
      ``"artifacts": null`` for artifacts never set.
    * ``base_len``, ``tail``: the messages past those it shares with `base`
      (its base row's history), as `pack_tail` stores them; ``base_len`` is
      None when it shares none, ``tail`` None when the messages were never set.
    """
    rest = snap.model_dump(
        mode="json",
        by_alias=True,
        exclude_none=True,
        exclude_unset=True,
        exclude=_SESSION_COLUMNS if in_session else _SNAPSHOT_COLUMNS,
    )
    created = encode_time(rest.pop("createdAt", None))
    kind = 0
    for key, codes, weight in _CODED:
        value = rest.get(key)
        code = codes.get(value) if isinstance(value, str) else None  # set without validation: kept
        if code is not None:
            del rest[key]
            kind += weight * code
    updated = encode_time(rest.get("updatedAt"))
    if isinstance(created, int) and isinstance(updated, int) and updated >= created:
        del rest["updatedAt"]
        kind += 128 * (updated - created + 1)
    meta = to_json(rest) if rest else None
    state = snap.state
    if state is None:
        return (created, kind, meta, None, None, None), None
    wire = state.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude_unset=True, exclude={"messages"}
    )
    if snap.session_id is not None:
        if wire.get("sessionId") == snap.session_id:
            del wire["sessionId"]
        elif "sessionId" not in wire:
            wire["sessionId"] = None
    if wire.get("artifacts") == []:
        del wire["artifacts"]
    elif "artifacts" not in wire:
        wire["artifacts"] = None
    messages = list(state.messages)
    if "messages" not in state.model_fields_set:  # `to_wire` leaves them out: no tail
        return (created, kind, meta, to_json(wire), None, None), messages
    shared = shared_prefix(messages, base) if base else 0
    return (created, kind, meta, to_json(wire), shared or None, pack_tail(messages[shared:])), messages


def unpack_meta(created: int | str | None, kind: int, meta: str | None) -> dict[str, Any]:
    """The wire fields that `pack_row` packed in ``created``, ``kind`` and ``meta`` (no ids, no state)."""
    wire: dict[str, Any] = json.loads(meta) if meta is not None else {}
    created_at = decode_time(created)
    if created_at is not None:
        wire["createdAt"] = created_at
    status, finish, updated = _STATUS[kind & 7], _FINISH[(kind >> 3) & 15], kind >> 7
    if status is not None:
        wire["status"] = status
    if finish is not None:
        wire["finishReason"] = finish
    if updated and isinstance(created, int):
        wire["updatedAt"] = decode_time(created + updated - 1)
    return wire


def unpack_state(text: str, session_id: str | None) -> dict[str, Any]:
    wire: dict[str, Any] = json.loads(text)
    if "sessionId" not in wire and session_id is not None:
        wire["sessionId"] = session_id
    if "artifacts" not in wire:
        wire["artifacts"] = []
    elif wire["artifacts"] is None:
        del wire["artifacts"]
    return wire


def pack_tail(messages: list[Message]) -> str | bytes:
    """Messages as stored: deflated bytes when smaller, else JSON text."""
    raw = messages_json(messages)
    packer = zlib.compressobj(6, zlib.DEFLATED, _WBITS, _MEMLEVEL, zdict=_ZDICT)
    packed = packer.compress(raw) + packer.flush()
    return packed if len(packed) < len(raw) else raw.decode("utf-8")


def unpack_tail(value: str | bytes | None) -> list[Message]:
    if isinstance(value, bytes):
        unpacker = zlib.decompressobj(_WBITS, zdict=_ZDICT)
        value = (unpacker.decompress(value) + unpacker.flush()).decode("utf-8")
    return load_messages(value)


# -- audit ----------------------------------------------------------------------------
def pack_audit(rec: AuditRecord) -> str:
    """A record without its ids: ``[name, ref, kind, answer, replaced_input, answered_at,
    answered_by, claimed_by, decision, input, requested_by]``, trailing nulls dropped (so a
    record of schema 2, which had no ``claimed_by``, and one written before decisions or
    requesters were kept read alike); ``respond``/``restart`` as 0/1, a millisecond time as
    an integer."""
    kind: Any = _KINDS.index(rec.kind) if rec.kind in _KINDS else rec.kind
    at: Any = encode_time(rec.answered_at) if isinstance(rec.answered_at, str) else rec.answered_at
    values = [
        rec.name, rec.ref, kind, rec.answer, rec.replaced_input, at, rec.answered_by, rec.claimed_by,
        rec.decision, rec.input, rec.requested_by,
    ]  # fmt: skip
    while values and values[-1] is None:
        values.pop()
    return to_json(values)


def unpack_audit(text: str, session_id: str, snapshot_id: str, child_id: str) -> AuditRecord:
    values: list[Any] = json.loads(text)
    values += [None] * (11 - len(values))
    name, ref, kind, answer, replaced, at, by, claimed, decision, ran, requested = values[:11]
    kind = _KINDS[kind] if isinstance(kind, int) and 0 <= kind < len(_KINDS) else kind
    answered_at = cast(str, decode_time(at))
    return AuditRecord(
        session_id, snapshot_id, child_id, name, ref, kind, answer, replaced, answered_at, by, claimed,
        decision, ran, requested,
    )  # fmt: skip


# -- a row as read ----------------------------------------------------------------------
def unpack_row(row: Sequence[Any], messages: Callable[[], list[Message]]) -> SessionSnapshot:
    """A snapshot from a row as read; `messages` rebuilds its history (asked only when
    the row has a tail)."""
    wire = unpack_meta(row[_CREATED], row[_KIND], row[_META])
    wire["snapshotId"] = decode_id(row[_ID])
    session_id = decode_id(row[_SESSION_ID]) if row[_SESSION_ID] is not None else None
    if session_id is not None:
        wire["sessionId"] = session_id
    if row[_PARENT] is not None:
        wire["parentId"] = ref_id(row[_PARENT], row[_PARENT_ID])
    if row[_AGENT] is not None:
        wire["agent"] = row[_AGENT]
    if row[_OWNER] is not None:
        wire["owner"] = row[_OWNER]
    if row[_STATE] is not None:
        state = SessionState.model_validate(unpack_state(row[_STATE], session_id))
        if row[_TAIL] is not None:
            # set after validation, which would check each message again: O(1), not O(history)
            state.messages = messages()
        wire["state"] = state
    return SessionSnapshot.model_validate(wire)


def ref_id(ref: Ref, row_id: Id | None) -> str:
    """The id a reference names: the joined row's id for a seq, else the stored id."""
    if isinstance(ref, int):
        assert row_id is not None, "a reference to a row that is gone"
        return decode_id(row_id)
    return decode_id(ref)
