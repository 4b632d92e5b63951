"""`Files`: one transaction of `FileSessionStore` on its directory, and its primitives.

A snapshot file is the snapshot's JSON, except that ``state.messages`` holds
only the messages its turn added, and ``$stored`` says where the others are::

    "$stored": {"rev": 3, "base": "<parent id>", "baseRev": 2, "baseLength": 40}

reads: the first 40 messages are those of the parent's history (as it was at
its revision 2, and still is: a rewrite of a base that drops messages others
build on gives those rows their messages back first), then this file's.
``rev`` counts the file's writes, so a cached history (by id and rev) is
known to be current. A row builds on its parent only in the same session
and when the parent is older (first in the session's index), so the chain
cannot loop; the index records each row's base, which finds the rows to
fix when a base is rewritten. A file without ``$stored`` (written before
this layout) holds its whole history, and reads as before.

Reads see the transaction's own writes; `commit` makes them: whole files
first, then the lines of the logs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import FailedPreconditionError
from ..types import Message, SessionSnapshot
from ._delta import MessageCache, dump, shared_prefix, validate_messages
from ._file_layout import (
    Index,
    IndexCache,
    append_file,
    decode,
    encode,
    encode_line,
    fname,
    read_json,
    read_lines,
    write_file,
)
from .base import AuditRecord, ResumeClaim, leaves

__all__ = ["STORED", "Files"]

STORED = "$stored"
_AUDIT_FIELDS = frozenset(AuditRecord.__dataclass_fields__)


class Files:
    """One transaction on the directory (`StoreTransaction`).

    Args:
        directory: The store's directory.
        indexes: The store's parsed session indexes.
        cache: The store's histories by ``(snapshot id, rev)``; what this
            transaction writes is in `written`, for the store to cache once committed.
    """

    def __init__(self, directory: Path, indexes: IndexCache, cache: MessageCache) -> None:
        self.directory = directory
        self.indexes = indexes
        self.cache = cache
        self.written: list[tuple[str, int, list[Message]]] = []
        self._writes: dict[Path, bytes | None] = {}  # None: delete the file
        self._appends: dict[Path, list[bytes]] = {}
        self._entries: dict[str, dict[str, dict[str, Any]]] = {}  # session -> index entries added here
        self._loaded: dict[str, Any] = {}  # the files `load` read, for `write`

    # -- rows ---------------------------------------------------------------------------
    def get(self, snapshot_id: str) -> SessionSnapshot | None:
        raw = self._read(self._path("snapshots", snapshot_id))
        return self._decode(snapshot_id, raw) if raw is not None else None

    def load(self, snapshot_id: str) -> SessionSnapshot | None:
        raw = self._loaded[snapshot_id] = self._read(self._path("snapshots", snapshot_id))
        return self._decode(snapshot_id, raw) if raw is not None else None

    def write(
        self, snapshot_id: str, current: SessionSnapshot | None, new: SessionSnapshot
    ) -> SessionSnapshot:
        old_raw = self._loaded.pop(snapshot_id)
        rev = _rev(old_raw) + 1
        wire = dump(new, {"state"})
        stored: dict[str, Any] = {"rev": rev}
        messages: list[Message] | None = None
        if new.state is not None:
            state = dump(new.state, {"messages"})
            if "messages" in new.state.model_fields_set:
                messages = list(new.state.messages)
                base = self._base(snapshot_id, new, is_new=old_raw is None)
                shared = shared_prefix(messages, base[2]) if base is not None else 0
                if base is not None and shared:
                    stored.update(base=base[0], baseRev=base[1], baseLength=shared)
                state["messages"] = [dump(m) for m in messages[shared:]]
            wire["state"] = state
        wire[STORED] = stored
        self._write(self._path("snapshots", snapshot_id), wire)
        if messages is not None:
            self.written.append((snapshot_id, rev, messages))
        if new.session_id:
            self._index(new.session_id, snapshot_id, new, stored.get("base"))
            if current is not None and current.state is not None:
                old = list(current.state.messages)
                self._rebase_dependents(
                    new.session_id, snapshot_id, rev, old, shared_prefix(messages or [], old)
                )
        return new

    def leaves(self, session_id: str) -> list[tuple[str, str]]:
        with self._index_of(session_id) as index:
            entries = {**index.entries, **self._entries.get(session_id, {})}
        return leaves((e["snapshotId"], e.get("parentId"), e.get("createdAt")) for e in entries.values())

    def session_ids(self) -> list[str]:
        found: list[tuple[str, str]] = []
        names = (p.name for p in (self.directory / "sessions").glob("*.json*"))
        stems = {name.rsplit(".", 1)[0] for name in names if not name.startswith(".")}
        for stem in stems:
            log = self.directory / "sessions" / f"{stem}.jsonl"
            with self.indexes.read(log, log.with_suffix(".json")) as index:
                if index.entries and index.session_id is not None:
                    first = min(e.get("createdAt") or "" for e in index.entries.values())
                    found.append((first, index.session_id))
        return [session_id for _, session_id in sorted(found)]

    # -- claims -------------------------------------------------------------------------
    def find_claim(self, snapshot_id: str) -> ResumeClaim | None:
        found = self._read(self._path("claims", snapshot_id))
        if found is None:
            return None
        return ResumeClaim(found["digest"], found["childId"], found.get("generation", 1))

    def hold_claim(self, snapshot_id: str, *, exclusive: bool) -> ResumeClaim | None:
        return self.find_claim(snapshot_id)  # a write transaction holds the directory's lock

    def add_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        value = {
            "snapshotId": snapshot_id,
            "digest": claim.digest,
            "childId": claim.child_id,
            "generation": claim.generation,
        }
        self._write(self._path("claims", snapshot_id), value)

    def swap_claim(self, snapshot_id: str, old: ResumeClaim, new: ResumeClaim) -> None:
        self.add_claim(snapshot_id, new)

    def drop_claim(self, snapshot_id: str, claim: ResumeClaim) -> None:
        self._writes[self._path("claims", snapshot_id)] = None

    # -- audit --------------------------------------------------------------------------
    def add_audit(self, records: Sequence[AuditRecord]) -> None:
        for rec in records:
            # encoded now, so a value JSON cannot hold fails here, before any write
            self._appends.setdefault(self._path("audit", rec.session_id, ".jsonl"), []).append(
                encode_line(rec.to_dict())
            )

    def audit(self, session_id: str) -> list[AuditRecord]:
        log = self._path("audit", session_id, ".jsonl")
        old = read_json(log.with_suffix(".json")) or {}  # the whole-file log of old
        records = [*old.get("records", []), *read_lines(log)[0]]
        records += [decode(line) for line in self._appends.get(log, [])]
        return [AuditRecord(**{k: v for k, v in r.items() if k in _AUDIT_FIELDS}) for r in records]

    # -- rules --------------------------------------------------------------------------
    def rules(self, session_id: str) -> list[dict[str, Any]]:
        found = self._read(self._path("rules", session_id))
        return list(found.get("rules", [])) if isinstance(found, dict) else []

    load_rules = rules  # a write transaction holds the directory's lock

    def set_rules(self, session_id: str, rules: list[dict[str, Any]]) -> None:
        path = self._path("rules", session_id)
        if rules:
            self._write(path, {"sessionId": session_id, "rules": rules})
        else:
            self._writes[path] = None

    # -- files --------------------------------------------------------------------------
    def commit(self) -> None:
        for path, data in self._writes.items():
            if data is None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            else:
                write_file(path, data)
        for path, lines in self._appends.items():
            append_file(path, b"".join(lines))
        self._writes.clear()
        self._appends.clear()

    def _path(self, kind: str, key: str, suffix: str = ".json") -> Path:
        return self.directory / kind / fname(key, suffix)

    def _read(self, path: Path) -> Any:
        if path in self._writes:
            data = self._writes[path]
            return decode(data) if data is not None else None
        return read_json(path)

    def _write(self, path: Path, value: Any) -> None:
        self._writes[path] = encode(value)

    # -- histories ----------------------------------------------------------------------
    def _decode(self, snapshot_id: str, file: dict[str, Any]) -> SessionSnapshot:
        raw = {k: v for k, v in file.items() if k != STORED}
        state = raw.get("state")
        if not isinstance(state, dict) or "messages" not in state:
            return SessionSnapshot.model_validate(raw)
        raw["state"] = {k: v for k, v in state.items() if k != "messages"}
        snap = SessionSnapshot.model_validate(raw)
        assert snap.state is not None
        # set after validation, which would check each message again: O(turn), not O(history)
        snap.state.messages = self._history(snapshot_id, file)
        return snap

    def _history(self, snapshot_id: str, raw: dict[str, Any]) -> list[Message]:
        """A row's whole history (`raw` is its file): its own messages after its base chain's,
        from the nearest cached link."""
        path = self._path("snapshots", snapshot_id)
        rev = _rev(raw)
        hit = self.cache.get(snapshot_id, rev)
        if hit is not None:
            return list(hit)
        links: list[tuple[int, Any]] = []  # (base length, own messages as JSON), newest first
        seen = {snapshot_id}
        messages: list[Message] = []
        while True:
            stored = raw.get(STORED) or {}
            base = stored.get("base")
            links.append((stored.get("baseLength", 0) if base is not None else 0, raw["state"]["messages"]))
            if base is None:
                break
            cached = self.cache.get(base, stored.get("baseRev", 0))
            if cached is not None:
                messages = list(cached)
                break
            raw = self._read(self._path("snapshots", base))
            if base in seen or raw is None or "messages" not in (raw.get("state") or {}):
                raise FailedPreconditionError(
                    f"{self.directory}: the history of snapshot {snapshot_id} names snapshot {base}, "
                    "whose file is missing or damaged."
                )
            seen.add(base)
        for length, own in reversed(links):
            messages = messages[:length] + validate_messages(own)
        if path not in self._writes:  # what this transaction writes is cached once it committed
            self.cache.put(snapshot_id, rev, messages)
        return messages

    def _base(
        self, snapshot_id: str, new: SessionSnapshot, *, is_new: bool
    ) -> tuple[str, int, list[Message]] | None:
        """The row whose history `new` continues: its parent, if in its session, older, with messages."""
        parent_id, session_id = new.parent_id, new.session_id
        if not parent_id or not session_id or parent_id == snapshot_id:
            return None
        with self._index_of(session_id) as index:
            mine, theirs = (
                self._order(index, session_id, snapshot_id),
                self._order(index, session_id, parent_id),
            )
        if theirs is None or (not is_new and mine is not None and mine < theirs):
            return None
        raw = self._read(self._path("snapshots", parent_id))
        if raw is None or "messages" not in (raw.get("state") or {}):
            return None
        return parent_id, _rev(raw), self._history(parent_id, raw)

    def _rebase_dependents(
        self, session_id: str, base_id: str, rev: int, old: list[Message], keep: int
    ) -> None:
        """Rows built on more of `base_id`'s old messages than its rewrite kept get them in their own file."""
        with self._index_of(session_id) as index:
            deps = set(index.dependents.get(base_id, ()))
        deps |= {i for i, e in self._entries.get(session_id, {}).items() if e.get("base") == base_id}
        for dep in sorted(deps):
            path = self._path("snapshots", dep)
            raw = self._read(path)
            stored = (raw or {}).get(STORED) or {}
            if raw is None or stored.get("base") != base_id or stored.get("baseLength", 0) <= keep:
                continue
            state = raw["state"]
            state["messages"] = [dump(m) for m in old[keep : stored["baseLength"]]] + state["messages"]
            raw[STORED] = {"rev": stored.get("rev", 0) + 1}
            if keep:
                raw[STORED].update(base=base_id, baseRev=rev, baseLength=keep)
            self._write(path, raw)
            snap = SessionSnapshot.model_validate({k: v for k, v in raw.items() if k != "state"})
            self._index(session_id, dep, snap, base_id if keep else None)

    # -- session indexes ----------------------------------------------------------------
    @contextlib.contextmanager
    def _index_of(self, session_id: str) -> Iterator[Index]:
        log = self._path("sessions", session_id, ".jsonl")
        with self.indexes.read(log, log.with_suffix(".json")) as index:
            yield index

    def _order(self, index: Index, session_id: str, snapshot_id: str) -> int | None:
        """Where the row first appears in the session's index (rows added here come last)."""
        found = index.order.get(snapshot_id)
        if found is not None:
            return found
        pending = list(self._entries.get(session_id, {}))
        return len(index.order) + pending.index(snapshot_id) if snapshot_id in pending else None

    def _index(self, session_id: str, snapshot_id: str, snap: SessionSnapshot, base: str | None) -> None:
        """Record the row's lineage and base in its session's index, when they changed."""
        entry = {
            k: v
            for k, v in (
                ("snapshotId", snapshot_id),
                ("parentId", snap.parent_id),
                ("createdAt", snap.created_at),
                ("base", base),
            )
            if v is not None
        }
        added = self._entries.setdefault(session_id, {})
        log = self._path("sessions", session_id, ".jsonl")
        with self._index_of(session_id) as index:
            if added.get(snapshot_id, index.entries.get(snapshot_id)) == entry:
                return
            lines = self._appends.setdefault(log, [])
            if index.ino is None and not lines:
                lines.append(encode_line({"sessionId": session_id}))  # a new log names its session
        added[snapshot_id] = entry
        lines.append(encode_line(entry))


def _rev(raw: Any) -> int:
    """A snapshot file's revision (0 for none, or a file of the old layout)."""
    return int(((raw or {}).get(STORED) or {}).get("rev", 0))
