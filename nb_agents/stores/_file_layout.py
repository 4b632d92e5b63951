"""The files of `FileSessionStore`: names, encodings, atomic writes and appends, session indexes.

Every file name is `fname(id)`: the id with unsafe characters replaced, cut
short, plus a hash of the exact id, so any session or snapshot id string is a
safe, distinct name (also on case-insensitive file systems). A whole file is
written to a temporary file and moved into place (`write_file`), so a reader
never sees half of one; a log (``.jsonl``: a session's index, its audit
records) only grows, one JSON line per entry (`append_file`), and a reader
skips a last line that a crash left without its newline.

A session's index (`Index`) is read once and then only as far as it grew:
`IndexCache` keeps each parsed index with the size it read, so a turn reads
the lines written since, not the whole log. The index of a store written
before logs existed (``<session>.json``, one JSON document) is read first,
then the log's lines.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = [
    "Index",
    "IndexCache",
    "append_file",
    "decode",
    "encode",
    "encode_line",
    "fname",
    "jsonable",
    "read_json",
    "read_lines",
    "write_file",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def fname(key: str, suffix: str = ".json") -> str:
    """A file name for any id: readable, bounded, and distinct per exact string."""
    readable = _UNSAFE.sub("_", key).lstrip(".")[:48]
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{readable}-{digest}{suffix}" if readable else f"{digest}{suffix}"


def decode(data: bytes) -> Any:
    return json.loads(data.decode("utf-8", "surrogatepass"))


def encode(value: Any) -> bytes:
    """A whole file: pretty-printed JSON."""
    return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"


def encode_line(value: Any) -> bytes:
    """One line of a log: compact JSON and a newline."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=jsonable)
    return text.encode("utf-8", "surrogatepass") + b"\n"


def jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return str(value)


def read_json(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return decode(data)


def write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def append_file(path: Path, data: bytes) -> None:
    """Append lines; a last line a crash left unfinished is ended first (it stays unreadable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        end = fh.seek(0, os.SEEK_END)
        if end:
            fh.seek(end - 1)
            if fh.read(1) != b"\n":
                data = b"\n" + data
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def read_lines(path: Path, offset: int = 0) -> tuple[list[Any], int]:
    """The complete lines of a log from `offset`, parsed, and the offset after the last one.

    A line that does not parse (what a crash mid-append left) is skipped.
    """
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    out: list[Any] = []
    for line in data[:end].splitlines():
        if line.strip():
            with contextlib.suppress(ValueError):
                out.append(decode(line))
    return out, offset + end


class Index:
    """One session's index as parsed so far: each snapshot's latest entry and first position.

    An entry is ``{"snapshotId", "parentId"?, "createdAt"?, "base"?}``: ``base``
    names the row whose messages the snapshot's file builds on. Use under `lock`.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.loaded = False
        self.session_id: str | None = None
        self.entries: dict[str, dict[str, Any]] = {}
        self.order: dict[str, int] = {}
        self.dependents: dict[str, set[str]] = {}  # base -> rows whose files build on it
        self.ino: int | None = None
        self.size = 0

    def add(self, entry: dict[str, Any]) -> None:
        snapshot_id = entry.get("snapshotId")
        if not isinstance(snapshot_id, str):
            if isinstance(entry.get("sessionId"), str):  # the log's first line names its session
                self.session_id = entry["sessionId"]
            return
        old = self.entries.get(snapshot_id)
        if old is not None and old.get("base") is not None:
            self.dependents.get(old["base"], set()).discard(snapshot_id)
        self.entries[snapshot_id] = entry
        self.order.setdefault(snapshot_id, len(self.order))
        if entry.get("base") is not None:
            self.dependents.setdefault(entry["base"], set()).add(snapshot_id)


class IndexCache:
    """The parsed indexes of a store's sessions, by log path, read on only as far as they grew."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[Path, Index] = {}

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    @contextlib.contextmanager
    def read(self, log: Path, legacy: Path) -> Iterator[Index]:
        """The index of `log` (after the entries of `legacy`, an index of old), up to date, locked."""
        with self._lock:
            index = self._items.get(log)
            if index is None:
                index = self._items[log] = Index()
        with index.lock:
            try:
                ino: int | None = os.stat(log).st_ino
            except FileNotFoundError:
                ino = None
            if index.loaded and index.ino != ino:
                index.reset()  # the log was created, replaced or removed since: read it anew
            if not index.loaded:
                old = read_json(legacy)
                if isinstance(old, dict):
                    index.session_id = old.get("sessionId")
                    for entry in old.get("snapshots", []):
                        index.add(entry)
                index.loaded = True
            index.ino = ino
            if ino is not None:
                lines, index.size = read_lines(log, index.size)
                for entry in lines:
                    if isinstance(entry, dict):
                        index.add(entry)
            yield index
