"""The floor: the least a durable approval server must do for S5's cycle (issue 23).

A plain ASGI app under uvicorn (the same uvicorn, HTTP parser and event loop
as ``nb-agents serve``), serving ``POST /bench`` with the wire JSON and SSE
shapes of nb_agents' server for the approval cycle, so that `s5_load` drives
it unchanged::

    NB_BENCH_LEDGER=/tmp/ledger.txt python benchmarks/floor_app.py --port 8765 --store sqlite:////tmp/f.db
    NB_BENCH_LEDGER=/tmp/ledger.txt python benchmarks/floor_app.py --port 8765 --store postgresql://u@h:p/db

What it does, and nothing more:

* ``send`` (``{"data": {"message": ...}, "init": {}}``): parse the JSON, read
  the cycle id from the text ``transfer <cycle>``, insert the paused row (the
  held ``transfer`` call) in one transaction, answer ``interrupted`` with the
  held call;
* ``resume`` (the held call restarted with ``resumed.toolApproved`` and
  ``init.snapshotId``): in one transaction, a compare-and-swap ``UPDATE ...
  WHERE status = 'paused'``; when it took the row, check the answer is the held
  call, run the tool once (its ledger line, as `peers/nb_agents/s5_app.py`
  writes it), append the ledger row holding the result, commit, answer
  ``stop`` with ``done <cycle>``; when it did not (a re-sent answer), answer
  the result the ledger row holds.

SQLite: one connection on the event loop (WAL, ``synchronous=NORMAL``, as
`SqliteSessionStore`'s default), each transaction run to its end without an
``await``, so requests never interleave inside one. PostgreSQL: psycopg's
async connections (autocommit; the resume in ``BEGIN ... COMMIT``), a pool of
8 as `PostgresSessionStore`'s. No history, no audit, no authorization, no
heartbeat, no abort: what nb_agents does beyond this is its overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

TOOL = "transfer"
PREFIX = "transfer "
POOL_SIZE = 8
SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
JSON_HEADERS = [(b"content-type", b"application/json")]
SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS turns (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, "
    "status TEXT NOT NULL, call TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger (parent_id TEXT PRIMARY KEY, key TEXT NOT NULL, result TEXT NOT NULL)",
)
PG_SCHEMA = SQLITE_SCHEMA

Json = dict[str, Any]


class BadRequestError(Exception):
    """The body is not the cycle this server knows."""


def _ledger_fd() -> int:
    path = os.environ.get("NB_BENCH_LEDGER")
    if not path:
        raise SystemExit("set NB_BENCH_LEDGER to the ledger file the transfer tool appends to")
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


LEDGER_FD = -1


def run_tool(cycle: str, key: str) -> str:
    """The tool: one ledger line per run (cycle, idempotency key, pid), as s5_app's ``transfer``."""
    os.write(LEDGER_FD, f"{cycle} {key} {os.getpid()}\n".encode())
    return cycle


def held_call(cycle: str) -> Json:
    return {"name": TOOL, "ref": "t1", "input": {"amount": 5, "cycle": cycle}}


def paused_output(session_id: str, snapshot_id: str, call: Json) -> Json:
    part = {"toolRequest": call, "metadata": {"interrupt": {"message": f"Tool not in approved list: {TOOL}"}}}
    return {
        "sessionId": session_id,
        "snapshotId": snapshot_id,
        "message": {"role": "model", "content": [part]},
        "finishReason": "interrupted",
    }


def done_output(session_id: str, snapshot_id: str, cycle: str) -> Json:
    return {
        "sessionId": session_id,
        "snapshotId": snapshot_id,
        "message": {"role": "model", "content": [{"text": f"done {cycle}"}]},
        "finishReason": "stop",
    }


def frames_of(out: Json, chunk: Json) -> bytes:
    """The SSE body nb_agents' server streams for this turn: its chunk, its turnEnd, the result."""
    end = {"turnEnd": {"snapshotId": out["snapshotId"], "finishReason": out["finishReason"]}}
    payloads = ({"message": {"modelChunk": chunk}}, {"message": end}, {"result": out})
    return b"".join(b"data: " + json.dumps(p, separators=(",", ":")).encode() + b"\n\n" for p in payloads)


def parse_resume(body: Json) -> tuple[str, Json]:
    """The snapshot id answered and the answered call, from a resume body."""
    snapshot_id = body["init"]["snapshotId"]
    (restart,) = body["data"]["resume"]["restart"]
    if not (restart.get("metadata") or {}).get("resumed", {}).get("toolApproved"):
        raise BadRequestError("the answer does not approve the call")
    return str(snapshot_id), dict(restart["toolRequest"])


# -- the stores -------------------------------------------------------------------------
class SqliteFloor:
    """Both transactions on one connection, on the loop."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        for stmt in SQLITE_SCHEMA:
            self.conn.execute(stmt)

    async def pause(self, snapshot_id: str, session_id: str, call: Json) -> None:
        self.conn.execute(
            "INSERT INTO turns (id, session_id, status, call) VALUES (?, ?, 'paused', ?)",
            (snapshot_id, session_id, json.dumps(call)),
        )

    async def resume(self, parent_id: str, answer: Json, make: Callable[[str, Json], Json]) -> Json:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                "UPDATE turns SET status = 'resumed' WHERE id = ? AND status = 'paused' "
                "RETURNING session_id, call",
                (parent_id,),
            ).fetchone()
            if row is None:
                conn.execute("ROLLBACK")
                return await self.replay(parent_id)
            result = make(row[0], json.loads(row[1]) | {"answer": answer})
            conn.execute(
                "INSERT INTO ledger (parent_id, key, result) VALUES (?, ?, ?)",
                (parent_id, result.pop("_key"), json.dumps(result)),
            )
            conn.execute("COMMIT")
            return result
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    async def replay(self, parent_id: str) -> Json:
        row = self.conn.execute("SELECT result FROM ledger WHERE parent_id = ?", (parent_id,)).fetchone()
        if row is None:
            raise BadRequestError(f"snapshot {parent_id} is not paused")
        return dict(json.loads(row[0]))

    async def close(self) -> None:
        self.conn.close()


class PostgresFloor:
    """psycopg async connections, autocommit; the resume in one explicit transaction."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.idle: list[Any] = []
        self.opened = 0
        self.free = asyncio.Condition()

    async def start(self) -> None:
        conn = await self._connect()
        for stmt in PG_SCHEMA:
            await conn.execute(stmt)
        self.idle.append(conn)

    async def _connect(self) -> Any:
        import psycopg

        self.opened += 1
        return await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)

    async def _with(self, fn: Callable[[Any], Awaitable[Json | None]]) -> Json | None:
        async with self.free:
            while not self.idle and self.opened >= POOL_SIZE:
                await self.free.wait()
            conn = self.idle.pop() if self.idle else None
        if conn is None:
            conn = await self._connect()
        try:
            return await fn(conn)
        finally:
            async with self.free:
                self.idle.append(conn)
                self.free.notify()

    async def pause(self, snapshot_id: str, session_id: str, call: Json) -> None:
        async def insert(conn: Any) -> None:
            await conn.execute(
                "INSERT INTO turns (id, session_id, status, call) VALUES (%s, %s, 'paused', %s)",
                (snapshot_id, session_id, json.dumps(call)),
            )

        await self._with(insert)

    async def resume(self, parent_id: str, answer: Json, make: Callable[[str, Json], Json]) -> Json:
        async def cas(conn: Any) -> Json | None:
            async with conn.transaction():
                cur = await conn.execute(
                    "UPDATE turns SET status = 'resumed' WHERE id = %s AND status = 'paused' "
                    "RETURNING session_id, call",
                    (parent_id,),
                )
                row = await cur.fetchone()
                if row is None:
                    return None
                result = make(row[0], json.loads(row[1]) | {"answer": answer})
                await conn.execute(
                    "INSERT INTO ledger (parent_id, key, result) VALUES (%s, %s, %s)",
                    (parent_id, result.pop("_key"), json.dumps(result)),
                )
                return result

        won = await self._with(cas)
        return won if won is not None else await self.replay(parent_id)

    async def replay(self, parent_id: str) -> Json:
        async def read(conn: Any) -> Json:
            cur = await conn.execute("SELECT result FROM ledger WHERE parent_id = %s", (parent_id,))
            row = await cur.fetchone()
            if row is None:
                raise BadRequestError(f"snapshot {parent_id} is not paused")
            return dict(json.loads(row[0]))

        got = await self._with(read)
        assert got is not None
        return got

    async def close(self) -> None:
        for conn in self.idle:
            await conn.close()


# -- the app ---------------------------------------------------------------------------
class Floor:
    """The ASGI app."""

    def __init__(self, store_url: str) -> None:
        self.store_url = store_url
        self.store: SqliteFloor | PostgresFloor | None = None

    async def open(self) -> None:
        global LEDGER_FD
        LEDGER_FD = _ledger_fd()
        if self.store_url.startswith("sqlite:///"):
            self.store = SqliteFloor(self.store_url[len("sqlite:///") :])
        elif self.store_url.startswith(("postgresql://", "postgres://")):
            pg = PostgresFloor(self.store_url)
            await pg.start()
            self.store = pg
        else:
            raise SystemExit(f"the floor serves sqlite:/// or postgresql:// stores, not {self.store_url!r}")

    async def __call__(self, scope: Json, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":  # GET /: the harness's readiness probe
            await send({"type": "http.response.start", "status": 200, "headers": JSON_HEADERS})
            await send({"type": "http.response.body", "body": b"{}"})
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        sse = any(k == b"accept" and b"text/event-stream" in v for k, v in scope["headers"])
        try:
            out, chunk = await self.turn(json.loads(b"".join(chunks)))
        except (BadRequestError, KeyError, TypeError, ValueError) as exc:
            body = json.dumps({"status": "INVALID_ARGUMENT", "message": str(exc)}).encode()
            await send({"type": "http.response.start", "status": 400, "headers": JSON_HEADERS})
            await send({"type": "http.response.body", "body": body})
            return
        if sse:
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            await send({"type": "http.response.body", "body": frames_of(out, chunk)})
            return
        body = json.dumps({"result": out}, separators=(",", ":")).encode()
        await send({"type": "http.response.start", "status": 200, "headers": JSON_HEADERS})
        await send({"type": "http.response.body", "body": body})

    async def turn(self, body: Json) -> tuple[Json, Json]:
        """A send or a resume: its output and the one chunk nb_agents streams for it."""
        assert self.store is not None
        data = body["data"]
        if "message" in data:
            text = "".join(p.get("text", "") for p in data["message"]["content"])
            if not text.startswith(PREFIX):
                raise BadRequestError(f"unexpected message {text[:40]!r}")
            call = held_call(text[len(PREFIX) :])
            snapshot_id, session_id = str(uuid.uuid4()), str(uuid.uuid4())
            await self.store.pause(snapshot_id, session_id, call)
            out = paused_output(session_id, snapshot_id, call)
            return out, {"role": "tool", "content": out["message"]["content"]}
        parent_id, answer = parse_resume(body)

        def make(session_id: str, row: Json) -> Json:
            answered = row.pop("answer")
            if answered != row:
                raise BadRequestError("the answer is not the held call")
            key = hashlib.sha256(f"{parent_id}\n{json.dumps(answered)}".encode()).hexdigest()[:32]
            cycle = run_tool(row["input"]["cycle"], key)
            return done_output(session_id, str(uuid.uuid4()), cycle) | {"_key": key}

        out = await self.store.resume(parent_id, answer, make)
        response = {"name": TOOL, "ref": "t1", "output": out["message"]["content"][0]["text"][len("done ") :]}
        return out, {"role": "tool", "index": 0, "content": [{"toolResponse": response}]}

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.open()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.store is not None:
                    await self.store.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


def main() -> None:
    ap = argparse.ArgumentParser(description="the floor server of S5 (issue 23)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--store", required=True, help="sqlite:///PATH or postgresql://...")
    args = ap.parse_args()
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("the floor serves loopback only")
    import uvicorn

    uvicorn.run(Floor(args.store), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
