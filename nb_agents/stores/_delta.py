"""The delta encoding of histories that the SQL stores share (pure, no I/O).

A snapshot row keeps its metadata, custom state and artifacts whole, but only
the messages its turn added: the first ``base_len`` messages are those of its
base row (its parent, when the parent has a state) and ``tail`` holds the
rest, as JSON. A read rebuilds the history by walking the base chain, newest
link first, until it reaches a row without a base or one in `MessageCache`.

The SQL stores (`SqliteSessionStore`, `PostgresSessionStore`) own their
queries and locking; this module owns the delta rule (`shared_prefix`,
`history`, `MessageCache`) that both follow, and the JSON of Postgres's rows
(SQLite packs the same pieces smaller: `._sqlite_codec`).
"""

from __future__ import annotations

import json
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import fields
from typing import Any, Protocol

from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticSerializationError

from ..types import Message, SessionSnapshot, SessionState
from .base import AuditRecord

__all__ = [
    "EncodedState",
    "Histories",
    "MessageCache",
    "decode_audit",
    "decode_snapshot",
    "detached",
    "dump",
    "encode_meta",
    "encode_row",
    "encode_state",
    "history",
    "load_messages",
    "messages_json",
    "rebased_tail",
    "shared_prefix",
    "to_json",
    "validate_messages",
]

_ADAPTERS: dict[str, TypeAdapter[list[Message]]] = {}


def _messages() -> TypeAdapter[list[Message]]:
    """Built on first use: every store imports this module, and `import nb_agents` must stay fast."""
    adapter = _ADAPTERS.get("messages")
    if adapter is None:
        adapter = _ADAPTERS["messages"] = TypeAdapter(list[Message])
    return adapter


_AUDIT_FIELDS = frozenset(f.name for f in fields(AuditRecord))
_WIRE: dict[str, Any] = {"by_alias": True, "exclude_none": True, "exclude_unset": True}
_CACHE_ROWS = 64
_CACHE_MESSAGES = 50_000  # references held, counted per row (shared ones too)

# One link of a base chain, newest first: (seq, rev, base_len, tail as stored).
ChainLink = tuple[int, int, int, Any]
# (state JSON without messages, base_len, tail); tail is None when messages were never set.
EncodedState = tuple[str, int, str | None]
# A row's columns: (session_id, parent_id, created_at, meta, state, base_seq, base_len, tail).
Columns = tuple[str | None, str | None, str, str, str | None, int | None, int, str | None]


def dump(value: BaseModel, exclude: set[str] | None = None) -> dict[str, Any]:
    """What `to_wire` emits and no default it left out: read back, the value has
    the same fields set, so its `to_wire()` is the same."""
    return value.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude_unset=True, exclude=exclude
    )


# `to_json(value)`: compact JSON, ASCII-escaped: pydantic-core's encoder rejects the lone
# surrogates that a JavaScript client can send, and an escaped ``\u0000`` fits in a text
# column that cannot hold a NUL. One encoder for every call (what `json.dumps` builds per call).
to_json: Callable[[Any], str] = json.JSONEncoder(
    separators=(",", ":"), default=lambda v: dump(v) if isinstance(v, BaseModel) else str(v)
).encode


def messages_json(messages: Sequence[Message]) -> bytes:
    """Messages as JSON (UTF-8): what `to_json` writes, by pydantic-core's faster
    encoder unless a value needs `to_json`'s escapes."""
    adapter = _ADAPTERS.get("messages") or _messages()
    try:
        return adapter.dump_json(list(messages), by_alias=True, exclude_none=True, exclude_unset=True)
    except PydanticSerializationError:  # a lone surrogate
        return to_json([dump(m) for m in messages]).encode("ascii")


def detached(snap: SessionSnapshot) -> SessionSnapshot:
    """A copy of `snap` with lists of its own; the messages and artifacts in them are
    shared (values nobody changes in place), so a copy costs a pointer per message.

    Built as pydantic's own shallow copy builds a model (its four slots set on a new
    instance), without its per-slot `copy.copy` calls: a store copies a row on every
    read and write, and this is two fifths cheaper than ``model_copy``.
    """
    fields = snap.__dict__.copy()
    models: list[tuple[BaseModel, dict[str, Any]]] = [(snap, fields)]
    state = snap.state
    if state is not None:
        inner = state.__dict__.copy()
        # set as `model_copy(update=...)` sets fields, without marking them set
        inner["messages"] = list(state.messages)
        inner["artifacts"] = list(state.artifacts)
        models.append((state, inner))
    made: list[Any] = []
    for model, values in models:
        copy = _new(type(model))
        _set(copy, "__dict__", values)
        _set(copy, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
        extra, private = model.__pydantic_extra__, model.__pydantic_private__
        _set(copy, "__pydantic_extra__", None if extra is None else dict(extra))
        _set(copy, "__pydantic_private__", None if private is None else dict(private))
        made.append(copy)
    if state is not None:
        fields["state"] = made[1]
    copied: SessionSnapshot = made[0]
    return copied


_new = object.__new__
_set = object.__setattr__  # a model's slots, as pydantic sets them (its `__setattr__` validates fields)


def load_messages(text: str | bytes | None) -> list[Message]:
    """Messages from a tail's JSON (None reads as none)."""
    return _messages().validate_python(json.loads(text or "[]"))


def validate_messages(data: Any) -> list[Message]:
    """Messages from their parsed JSON (a list of wire dicts)."""
    return _messages().validate_python(data)


def shared_prefix(new: Sequence[Message], old: Sequence[Message]) -> int:
    """How many leading messages of `new` are the same as `old`'s.

    Messages are immutable values, so the common case is the very same object;
    otherwise they are compared as JSON (pydantic's ``==`` would take 1 for True).
    """
    n = min(len(new), len(old))
    try:  # the first message that is not the same object, found without a Python loop
        i = operator.indexOf(map(operator.is_, new, old), False)
    except ValueError:
        return n
    while i < n:
        a, b = new[i], old[i]
        if a is not b:
            try:  # pydantic-core's JSON tells most messages that differ apart, at a fraction of the cost
                if a.model_dump_json(**_WIRE) != b.model_dump_json(**_WIRE):
                    break
            except PydanticSerializationError:  # a lone surrogate: `to_json` decides
                pass
            if to_json(dump(a)) != to_json(dump(b)):  # told apart wrongly above, a row only stores more
                break
        i += 1
    return i


def encode_meta(snap: SessionSnapshot, *, in_session: bool = False) -> str:
    """A row's metadata column: the snapshot without its state (nor, `in_session`,
    its agent and owner, which its session's row holds)."""
    return to_json(dump(snap, {"state", "agent", "owner"} if in_session else {"state"}))


def encode_state(state: SessionState, base: Sequence[Message] | None) -> EncodedState:
    """A state as stored against `base` (the base row's history, if there is one)."""
    messages = list(state.messages)
    base_len = shared_prefix(messages, base) if base else 0
    # a None tail: the state's messages were never set (so `to_wire` omits them)
    has_messages = "messages" in state.model_fields_set
    tail = to_json([dump(m) for m in messages[base_len:]]) if has_messages else None
    return to_json(dump(state, {"messages"})), base_len, tail


def encode_row(
    new: SessionSnapshot,
    base: Callable[[], tuple[int, Sequence[Message]] | None],
    *,
    in_session: bool = False,
) -> tuple[Columns, list[Message] | None]:
    """The columns that store `new`, and its history (None without a state).

    `base` finds the base row's ``seq`` and history (asked only when `new` has
    a state); the row points at it only when they share a prefix. `in_session`:
    the agent and owner are the session's, not the row's (see `encode_meta`).
    """
    state: str | None = None
    base_seq: int | None = None
    base_len = 0
    tail: str | None = None
    messages: list[Message] | None = None
    if new.state is not None:
        messages = list(new.state.messages)
        found = base()
        state, base_len, tail = encode_state(new.state, found[1] if found is not None else None)
        base_seq = found[0] if found is not None and base_len else None
    cols = (
        new.session_id,
        new.parent_id,
        new.created_at or "",
        encode_meta(new, in_session=in_session),
        state,
        base_seq,
        base_len,
        tail,
    )
    return cols, messages


def decode_snapshot(
    meta: str,
    state: str | None,
    tail: str | None,
    messages: Callable[[], list[Message]],
    agent: str | None = None,
    owner: str | None = None,
) -> SessionSnapshot:
    """A snapshot from its columns; `messages` rebuilds the history when there is one;
    the session's `agent` and `owner`, when it names them, are the row's."""
    wire = json.loads(meta)
    if agent is not None:
        wire["agent"] = agent
    if owner is not None:
        wire["owner"] = owner
    if state is not None:
        state_wire = json.loads(state)
        if tail is not None:
            state_wire["messages"] = messages()
        wire["state"] = SessionState.model_validate(state_wire)
    return SessionSnapshot.model_validate(wire)


def rebased_tail(old: Sequence[Message], keep: int, dep_len: int, dep_tail: str | None) -> str:
    """The tail of a row built on `dep_len` messages of a base that now keeps only `keep`."""
    return to_json([dump(m) for m in old[keep:dep_len]] + json.loads(dep_tail or "[]"))


def decode_audit(text: str) -> AuditRecord:
    """An audit record from its stored JSON (``to_json(record.to_dict())``); unknown keys are dropped."""
    data = json.loads(text)
    return AuditRecord(**{k: v for k, v in data.items() if k in _AUDIT_FIELDS})


class Histories(Protocol):
    """Where `history` finds and keeps rebuilt histories (`MessageCache`, or a store's own)."""

    def get(self, seq: Hashable, rev: int) -> Sequence[Message] | None: ...

    def put(self, seq: Hashable, rev: int, messages: Sequence[Message]) -> None: ...


def history(
    cache: Histories,
    seq: int,
    rev: int,
    has_base: bool,
    tail: Any,
    chain: Callable[[], Iterable[ChainLink]],
    load: Callable[[Any], list[Message]] = load_messages,
) -> list[Message]:
    """A row's whole history, from the nearest cached link of its base chain.

    Args:
        cache: Histories already rebuilt, keyed by ``(seq, rev)``.
        seq: The row's ``seq``.
        rev: The row's revision.
        has_base: Whether the row names a base row.
        tail: The row's own tail.
        chain: Reads the chain from the row itself down, newest first (one query).
        load: Reads a stored tail (`load_messages` for JSON text).
    """
    hit = cache.get(seq, rev)
    if hit is not None:
        return list(hit)
    if not has_base:
        messages = load(tail)
    else:
        pending: list[tuple[int, Any]] = []
        messages = []
        for link_seq, link_rev, link_len, link_tail in chain():
            cached = cache.get(link_seq, link_rev)
            if cached is not None:
                messages = list(cached)
                break
            pending.append((link_len, link_tail))
        for link_len, link_tail in reversed(pending):
            messages = messages[:link_len] + load(link_tail)
    cache.put(seq, rev, messages)
    return messages


class MessageCache:
    """Recently saved or loaded histories, keyed by row ``seq`` (or another key: the file
    store's is the snapshot id) and checked by ``rev``.

    Example:
        >>> cache = MessageCache()
        >>> cache.put(1, 1, [])
        >>> cache.get(1, 2) is None
        True
    """

    def __init__(self, rows: int = _CACHE_ROWS) -> None:
        self._items: OrderedDict[Hashable, tuple[int, tuple[Message, ...]]] = OrderedDict()
        self._size = 0
        self._rows = rows
        self._lock = threading.Lock()

    def get(self, seq: Hashable, rev: int) -> tuple[Message, ...] | None:
        with self._lock:
            item = self._items.get(seq)
            if item is None or item[0] != rev:
                return None
            self._items.move_to_end(seq)
            return item[1]

    def put(self, seq: Hashable, rev: int, messages: Sequence[Message]) -> None:
        with self._lock:
            old = self._items.pop(seq, None)
            self._size += len(messages) - (len(old[1]) if old else 0)
            self._items[seq] = (rev, tuple(messages))
            while len(self._items) > 1 and (len(self._items) > self._rows or self._size > _CACHE_MESSAGES):
                self._size -= len(self._items.popitem(last=False)[1][1])

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0
