"""The tables of `SqliteSessionStore`, and how a database of an older version becomes this one.

The schema (``PRAGMA user_version`` 3)::

    sessions   key INTEGER PRIMARY KEY, id UNIQUE, first,   -- first: seq of its first snapshot
               agent, owner                                 -- the session's, for all its rows
    snapshots  seq INTEGER PRIMARY KEY, id UNIQUE, session, parent, leaf, rev,
               created, kind, meta, state, base_len, tail
    claims     snap PRIMARY KEY, digest, child, generation   -- WITHOUT ROWID
    audit      (session, n) PRIMARY KEY, snap, child, record -- WITHOUT ROWID
    rules      session PRIMARY KEY, rules                    -- a session's approval rules (JSON)

The ``rules`` table came without a version of its own: a database without it
gains it on open (``CREATE TABLE IF NOT EXISTS``), and older readers ignore it.
`init_schema` makes a database this version, or refuses it.
`MIGRATE` maps an older version to the statements that make it this one, run
in the store's schema transaction before `SCHEMA` (whose statements then
pass): version 2 gains the sessions' agent and owner, taken from the first
of each session's rows that names them (version 2 kept them in each row's
``meta``, where they stay, read only when the session names none), and the
claims' generation (1 for every claim made before). An audit record of
version 2 has no ``claimed_by``, and reads as one without (`._sqlite_codec`).
"""

from __future__ import annotations

import sqlite3
import time

from ..errors import FailedPreconditionError

__all__ = ["MIGRATE", "SCHEMA", "SCHEMA_VERSION", "init_schema"]

SCHEMA_VERSION = 3
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS sessions (
        key INTEGER PRIMARY KEY, id NOT NULL UNIQUE, first INTEGER, agent TEXT, owner TEXT)""",
    """CREATE TABLE IF NOT EXISTS snapshots (
        seq INTEGER PRIMARY KEY,
        id NOT NULL UNIQUE,
        session INTEGER,
        parent,
        leaf INTEGER NOT NULL,
        rev INTEGER NOT NULL,
        created,
        kind INTEGER NOT NULL,
        meta TEXT,
        state TEXT,
        base_len INTEGER,
        tail)""",
    "CREATE INDEX IF NOT EXISTS snapshots_parent ON snapshots (parent)",
    "CREATE INDEX IF NOT EXISTS snapshots_leaves ON snapshots (session) WHERE leaf = 1",
    """CREATE TABLE IF NOT EXISTS claims (
        snap PRIMARY KEY, digest NOT NULL, child NOT NULL, generation INTEGER NOT NULL DEFAULT 1)
        WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS audit (
        session INTEGER NOT NULL, n INTEGER NOT NULL, snap, child, record TEXT NOT NULL,
        PRIMARY KEY (session, n)) WITHOUT ROWID""",
    "CREATE TABLE IF NOT EXISTS rules (session INTEGER PRIMARY KEY, rules TEXT NOT NULL)",
)

_FIRST_NAMED = """(SELECT json_extract(s.meta, '$.{0}') FROM snapshots s
        WHERE s.session = sessions.key AND json_valid(s.meta) AND json_type(s.meta, '$.{0}') = 'text'
        ORDER BY s.seq LIMIT 1)"""
MIGRATE = {
    2: (
        "ALTER TABLE sessions ADD COLUMN agent TEXT",
        "ALTER TABLE sessions ADD COLUMN owner TEXT",
        "ALTER TABLE claims ADD COLUMN generation INTEGER NOT NULL DEFAULT 1",
        f"UPDATE sessions SET agent = {_FIRST_NAMED.format('agent')}, owner = {_FIRST_NAMED.format('owner')}",
    ),
}


def init_schema(conn: sqlite3.Connection, path: str) -> None:
    """Switch the database to WAL, and create or migrate its tables (in one transaction);
    a database of a version this nb_agents cannot read raises `FailedPreconditionError`."""
    for attempt in range(50):
        try:
            # switching to WAL takes an exclusive lock; another process may hold it
            conn.execute("PRAGMA journal_mode = WAL")
            break
        except sqlite3.OperationalError:
            if attempt == 49:
                raise
            time.sleep(0.05)
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION, *MIGRATE):
            readable = ", ".join(str(v) for v in sorted({*MIGRATE, SCHEMA_VERSION}))
            raise FailedPreconditionError(
                f"{path} has nb_agents schema version {version}; this nb_agents reads versions "
                f"{readable} (migrating older ones to {SCHEMA_VERSION}): use a new database file."
            )
        for stmt in MIGRATE.get(version, ()):
            conn.execute(stmt)
        for stmt in SCHEMA:
            conn.execute(stmt)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
