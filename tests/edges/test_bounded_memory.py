"""`nb-agents serve` on an in-memory store is bounded, and says so when a waiting session goes.

The edge app's agent is defined on an unbounded ``InMemorySessionStore()``. Served,
it keeps at most ``--max-sessions`` sessions (10,000 unless told): before, every
session stayed until the process ended (+3.6 KB per approval cycle, see
``benchmarks/memory_per_cycle.py``). A session evicted while it waited for an
answer is logged by the server, and its answer and its snapshot are answered 404
``NOT_FOUND`` naming the eviction, not "not found".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from .conftest import ledger
from .test_hostile_bytes import pause


def test_a_waiting_session_evicted_by_the_bound_is_logged_and_named_when_answered(
    serve: Any, tmp_path: Path
) -> None:
    server = serve(None, args=("--max-sessions", "2"))
    first = pause(server, "acct0")
    pause(server, "acct1")
    pause(server, "acct2")  # the third session: the least recently used, acct0, goes
    call = first["message"]["content"][0]["toolRequest"]
    restart = {"toolRequest": call, "metadata": {"resumed": True}}
    body = {"data": {"resume": {"restart": [restart]}}, "init": {"snapshotId": first["snapshotId"]}}
    res = httpx.post(server.url + "/bank", json=body, timeout=10)
    assert res.status_code == 404, res.text
    err = res.json()
    assert err["status"] == "NOT_FOUND"
    assert err["message"].startswith(f"Snapshot {first['snapshotId']} was evicted from the in-memory")
    assert "while it waited for an answer (over max_sessions=2)" in err["message"]
    got = httpx.post(server.url + "/bank/getSnapshot", json={"data": {"sessionId": "acct0"}}, timeout=10)
    assert got.status_code == 404 and "Session acct0 was evicted" in got.json()["message"]
    assert ledger(tmp_path) == []  # nothing ran
    assert "evicted session acct0 while it waited for an answer (over max_sessions=2)" in server.output()
    # the sessions within the bound are untouched
    kept = httpx.post(server.url + "/bank/getSnapshot", json={"data": {"sessionId": "acct2"}}, timeout=10)
    assert kept.status_code == 200 and kept.json()["result"]["finishReason"] == "interrupted"
