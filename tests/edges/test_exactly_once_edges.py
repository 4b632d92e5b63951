"""Exactly once at the edges, against `nb-agents serve` on SQLite and PostgreSQL (issue 11).

A client times out after the tool started, aborts it, or disconnects at a
random moment, then sends the same answer again: the tool ran at most once,
and the re-send gets the recorded outcome. An explicit retry runs one more
attempt, with the same idempotency key. A server stopped past its heartbeat is
taken over; its late write is refused (fencing), so each interrupt has one
recorded outcome.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import ledger
from .served import Served

STORES = ["sqlite", "postgres"]
TRIALS = 20


def pause(url: str, session: str) -> dict[str, Any]:
    body = {
        "data": {"message": {"role": "user", "content": [{"text": "send 500"}]}},
        "init": {"sessionId": session},
    }
    out = httpx.post(url + "/bank", json=body, timeout=30).json()["result"]
    assert out["finishReason"] == "interrupted", out
    return out


def answer(paused: dict[str, Any], *, retry: bool = False) -> dict[str, Any]:
    ref = paused["message"]["content"][0]["toolRequest"]["ref"]
    restart = {
        "toolRequest": {"name": "transfer", "ref": ref, "input": {"amount": 500}},
        "metadata": {"resumed": True},
    }
    data: dict[str, Any] = {"resume": {"restart": [restart]}}
    if retry:
        data["retry"] = True
    return {"data": data, "init": {"snapshotId": paused["snapshotId"]}}


def resume(url: str, paused: dict[str, Any], *, retry: bool = False, timeout: float = 30) -> dict[str, Any]:
    res = httpx.post(url + "/bank", json=answer(paused, retry=retry), timeout=timeout)
    assert res.status_code == 200, res.text
    return dict(res.json()["result"])


def runs(tmp: Path, session_key: str | None = None) -> list[dict[str, Any]]:
    return [r for r in ledger(tmp) if session_key is None or r["key"] == session_key]


def wait_for(predicate: Any, what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


@pytest.mark.parametrize("store", STORES)
def test_a_retry_after_a_client_timeout_gets_the_recorded_outcome(
    serve: Any, store: str, tmp_path: Path
) -> None:
    server: Served = serve(store, env={"NBA_TOOL_DELAY": "0.4"})
    for trial in range(TRIALS):
        paused = pause(server.url, f"timeout-{trial}")
        before = len(ledger(tmp_path))
        with pytest.raises(httpx.TimeoutException):  # the client gives up while the tool runs
            httpx.post(server.url + "/bank", json=answer(paused), timeout=0.2)
        wait_for(lambda: len(ledger(tmp_path)) == before + 1, "the tool's run")
        again = resume(server.url, paused)  # the same answer: the recorded outcome, not a new run
        assert again["finishReason"] == "aborted", again
        assert len(ledger(tmp_path)) == before + 1
    # an explicit retry runs exactly one more attempt, with the same idempotency key
    first_key = ledger(tmp_path)[-1]["key"]
    done = resume(server.url, paused, retry=True)
    assert done["finishReason"] == "stop" and done["message"]["content"][0]["text"] == "transfer done"
    assert len(ledger(tmp_path)) == TRIALS + 1 and ledger(tmp_path)[-1]["key"] == first_key
    assert resume(server.url, paused)["finishReason"] == "stop"  # and that outcome replays from now on
    assert len(ledger(tmp_path)) == TRIALS + 1


def resume_until_the_tool_ran(
    server: Served, session: str, paused: dict[str, Any], tmp_path: Path
) -> tuple[dict[str, Any], threading.Thread, dict[str, Any]]:
    """Resume `paused` in a thread; once its tool has run, the session's newest snapshot (the running child).

    Returns what the resume will answer (filled when the thread ends), the thread, and that snapshot.
    """
    before = len(ledger(tmp_path))
    got: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: got.update(resume(server.url, paused)))
    worker.start()
    wait_for(lambda: len(ledger(tmp_path)) == before + 1, "the tool's run")
    leaf = httpx.post(server.url + "/bank/getSnapshot", json={"data": {"sessionId": session}}, timeout=10)
    return got, worker, leaf.json()["result"]


@pytest.mark.parametrize("store", STORES)
def test_abort_after_the_tool_ran_then_the_same_answer(serve: Any, store: str, tmp_path: Path) -> None:
    server: Served = serve(store, env={"NBA_TOOL_DELAY": "0.5"})
    landed = 0
    for trial in range(TRIALS):
        session = f"abort-{trial}"
        paused = pause(server.url, session)
        before = len(ledger(tmp_path))
        got, worker, child = resume_until_the_tool_ran(server, session, paused, tmp_path)
        aborted = httpx.post(
            server.url + "/bank/abort", json={"data": {"snapshotId": child["snapshotId"]}}, timeout=10
        )
        worker.join(15)
        # on a loaded machine the tool's 0.5 s may be over before the abort lands: then the
        # turn completed, and that outcome is what the caller, the row and a re-send agree on
        was = aborted.json()["result"]["status"]
        assert was in ("pending", "completed") and child["status"] in ("pending", "completed"), (was, child)
        expected = "aborted" if was == "pending" else "stop"
        landed += was == "pending"
        assert got["finishReason"] == expected, (was, got)
        assert resume(server.url, paused)["finishReason"] == expected
        assert len(ledger(tmp_path)) == before + 1
    assert landed >= TRIALS // 2, f"only {landed} of {TRIALS} aborts landed while the tool ran"


@pytest.mark.parametrize("store", STORES)
def test_disconnects_at_random_moments_run_each_answer_at_most_once(
    serve: Any, store: str, tmp_path: Path
) -> None:
    server: Served = serve(store, env={"NBA_TOOL_DELAY": "0.2"})
    rng = random.Random(11)
    for trial in range(TRIALS):
        paused = pause(server.url, f"random-{trial}")
        before = len(ledger(tmp_path))
        try:
            httpx.post(server.url + "/bank", json=answer(paused), timeout=rng.uniform(0.01, 0.4))
        except httpx.TimeoutException:
            pass
        time.sleep(0.3)  # let the server settle the aborted turn
        again = resume(server.url, paused)
        ran = len(ledger(tmp_path)) - before
        assert ran <= 1, f"trial {trial}: the tool ran {ran} times for one answer"
        if again["finishReason"] == "aborted":  # it had started: only a retry goes on
            assert ran == 1
            assert resume(server.url, paused, retry=True)["finishReason"] == "stop"
            assert len(ledger(tmp_path)) - before == 2
        else:  # it completed, or never started and this re-send ran it
            assert again["finishReason"] == "stop" and ran == 1


@pytest.mark.parametrize("store", STORES)
def test_an_abort_landing_as_the_turn_finishes_is_what_the_caller_is_told(
    serve: Any, store: str, tmp_path: Path
) -> None:
    """The abort is aimed at the end of the tool's sleep, so some land as the final row goes in
    (found by benchmarks/s5_faults.py): the live answer, the row and a re-send all agree, and a
    caller told "stop" never has a reason to retry."""
    delay = 0.3
    server: Served = serve(store, env={"NBA_TOOL_DELAY": str(delay)})
    outcomes = set()
    for trial in range(TRIALS):
        session = f"late-abort-{trial}"
        paused = pause(server.url, session)
        before = len(ledger(tmp_path))
        got, worker, running = resume_until_the_tool_ran(server, session, paused, tmp_path)
        ran_at = time.monotonic()
        child = running["snapshotId"]
        time.sleep(max(0.0, ran_at + delay - 0.02 + 0.025 * trial / TRIALS - time.monotonic()))
        httpx.post(server.url + "/bank/abort", json={"data": {"snapshotId": child}}, timeout=10)
        worker.join(15)
        row = httpx.post(server.url + "/bank/getSnapshot", json={"data": {"snapshotId": child}}, timeout=10)
        again = resume(server.url, paused)
        live = got["finishReason"]
        recorded = {"completed": "stop", "aborted": "aborted"}[row.json()["result"]["status"]]
        assert live == recorded == again["finishReason"], (trial, live, recorded, again)
        assert len(ledger(tmp_path)) == before + 1
        outcomes.add(live)
    assert outcomes  # (which of the two each trial got depends on the machine's timing)


@pytest.mark.parametrize("store", STORES)
def test_a_resend_after_a_disconnect_before_any_tool_ran_runs_the_answer(
    serve: Any, store: str, tmp_path: Path
) -> None:
    """The first send's connection closes a few ms in; when nothing had run its claim is
    released, and the same answer sent at once runs normally, never replaying that abort."""
    import json
    import socket

    server: Served = serve(store)
    rng = random.Random(5)
    port = int(server.url.rsplit(":", 1)[1])
    for trial in range(TRIALS):
        paused = pause(server.url, f"early-{trial}")
        before = len(ledger(tmp_path))
        body = json.dumps(answer(paused)).encode()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            head = "POST /bank HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            head += f"Content-Length: {len(body)}"
            sock.sendall(f"{head}\r\n\r\n".encode() + body)
            time.sleep(rng.uniform(0, 0.004))
        again = resume(server.url, paused)
        ran = len(ledger(tmp_path)) - before
        # "aborted" is right only when the first attempt's tool had started before the close
        # was noticed; an aborted answer with nothing run is the bug this guards against
        assert ran == 1 and again["finishReason"] in ("stop", "aborted"), (trial, again, ran)


@pytest.mark.parametrize("store", STORES)
def test_a_stalled_server_is_taken_over_and_its_late_write_refused(
    serve: Any, store: str, tmp_path: Path
) -> None:
    timing = ("--heartbeat-timeout", "2")
    env = {"NBA_TOOL_DELAY": "1.0"}
    a: Served = serve(store, args=timing, env=env)
    url = a.store_url
    assert url is not None
    b: Served = serve(url, args=timing, env=env)
    paused = pause(a.url, "stall")
    threading.Thread(target=lambda: _quietly(lambda: resume(a.url, paused, timeout=60)), daemon=True).start()
    wait_for(lambda: len(ledger(tmp_path)) == 1, "the first worker's tool run")
    a.stop_process()  # frozen mid-tool: its heartbeat stops too
    time.sleep(3)  # past the heartbeat timeout
    done = resume(b.url, paused)  # the same answer, to the other server: it takes the claim over
    assert done["finishReason"] == "stop", done
    a.cont()
    time.sleep(2)  # the first worker finishes its tool and tries to write
    runs_ = ledger(tmp_path)
    assert len(runs_) == 2 and runs_[0]["key"] == runs_[1]["key"] and runs_[0]["pid"] != runs_[1]["pid"]
    assert "lost its claim" in a.output()
    records = _audit(url, "stall")
    assert [r.child_id for r in records] == [done["snapshotId"]]  # one recorded outcome for the interrupt
    assert resume(a.url, paused)["snapshotId"] == done["snapshotId"]  # both servers replay it


def _quietly(fn: Any) -> None:
    try:
        fn()
    except Exception:  # noqa: BLE001 - the frozen server's client may fail any way it likes
        pass


def _audit(url: str, session: str) -> list[Any]:
    """The session's audit records, read from the store the servers share."""
    import asyncio

    from nb_agents.server.cli import parse_store_url

    async def read() -> list[Any]:
        async with parse_store_url(url) as store:  # type: ignore[attr-defined]
            return list(await store.audit(session))

    return asyncio.run(read())
