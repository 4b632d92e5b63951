"""Genkit's real JS client (npm ``genkit`` 1.42.0, ``remoteAgent`` from 'genkit/beta/client')
against an nb_agents server on 127.0.0.1.

``js/bank_flow.mjs`` runs every scenario once against `nb_apps.serve_bank` and prints
what the client saw; each test here checks one scenario field by field, and what
the server did or received (the tool's runs, the request bodies).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import run_json
from .nb_apps import DONE, QUESTION, TRANSFER, Bank, serve_bank

Flow = tuple[dict[str, Any], Bank]


@pytest.fixture(scope="module")
def flow(genkit_js: Path, tmp_path_factory: pytest.TempPathFactory) -> Flow:
    bank, server = serve_bank(tmp_path_factory.mktemp("js-bank"))
    try:
        results = run_json(["node", genkit_js / "bank_flow.mjs", bank.url], cwd=genkit_js)
        bank.wait_blocker_stopped(2)  # detach-then-abort, and the stream the client closed
    finally:
        server.stop()
    return results, bank


def scenario(flow: Flow, name: str) -> dict[str, Any]:
    got: dict[str, Any] = flow[0][name]
    assert "thrown" not in got, f"{name}: {got['thrown']}\n{got.get('stack', '')}"
    return got


def test_respond_answers_an_interrupt(flow: Flow) -> None:
    got = scenario(flow, "respond")
    first, resumed = got["first"], got["resumed"]
    assert first["finishReason"] == "interrupted" and first["text"] == ""
    assert first["interrupts"] == [{"name": "userApproval", "ref": "q1", "input": QUESTION}]
    assert got["answer"] == {
        "toolResponse": {
            "name": "userApproval",
            "ref": "q1",
            "output": {"approved": True, "note": "go ahead"},
        }
    }
    assert resumed["finishReason"] == "stop" and resumed["interrupts"] == []
    assert resumed["text"] == 'You answered {"approved": true, "note": "go ahead"}.'
    assert resumed["sessionId"] == first["sessionId"]
    assert resumed["snapshotId"] not in (None, first["snapshotId"])
    assert got["chatSnapshotId"] == resumed["snapshotId"]
    # the JS client keeps the user message and each turn's reply (no tool message: server-managed)
    assert got["roles"] == ["user", "model", "model"]


def test_restart_with_resumed_metadata_runs_the_tool_and_streams_text(flow: Flow) -> None:
    got, bank = scenario(flow, "restart"), flow[1]
    first, resumed = got["first"], got["resumed"]
    assert first["finishReason"] == "interrupted"
    assert first["interrupts"] == [{"name": "transferMoney", "ref": "t1", "input": TRANSFER}]
    assert got["answer"] == {
        "toolRequest": {"name": "transferMoney", "ref": "t1", "input": TRANSFER},
        "metadata": {"resumed": {"approved": True}},
    }
    # the resume body the server received holds the client's restart part unchanged
    resumes = [b for b in bank.bodies("/bankingAgent") if "resume" in b["data"]]
    assert {"restart": [got["answer"]]} in [b["data"]["resume"] for b in resumes]
    assert [(c["kind"], c["text"]) for c in got["chunks"]] == [
        ("model:tool", ""),
        ("model:model", "Done: "),
        ("model:model", "transaction txn-123."),
        ("turnEnd", ""),
    ]
    assert got["chunks"][-1]["accumulatedText"] == DONE
    assert resumed["finishReason"] == "stop" and resumed["text"] == DONE
    assert resumed["sessionId"] == first["sessionId"]


def test_get_snapshot_and_abort(flow: Flow) -> None:
    got = scenario(flow, "snapshots")
    resumed, snap, paused = got["resumed"], got["bySnapshot"], got["paused"]
    assert snap == {
        "snapshotId": resumed["snapshotId"],
        "sessionId": resumed["sessionId"],
        "parentId": paused["snapshotId"],
        "status": "completed",
        "finishReason": "stop",
        "roles": ["user", "model", "tool", "model"],
    }
    assert got["bySession"] == snap  # by session id: the leaf
    assert paused["status"] == "completed" and paused["finishReason"] == "interrupted"
    assert paused["roles"] == ["user", "model"] and paused["parentId"] is None
    assert got["missing"]["thrown"]["message"].startswith("Server returned: 404: ")
    assert '"status":"NOT_FOUND"' in got["missing"]["thrown"]["message"]
    # abort answers the status the snapshot had before; a finished turn stays finished
    assert (got["abort"], got["abortAgain"], got["abortUnknown"]) == ("completed", "completed", None)


def test_init_misuse_surfaces_the_server_error(flow: Flow) -> None:
    got = scenario(flow, "misuse")
    state = got["stateToServerManaged"]["thrown"]
    # remoteAgent reports any non-200 as UNKNOWN with the body in the message (Genkit's own quirk)
    assert (state["name"], state["status"]) == ("AgentError", "UNKNOWN")
    assert state["message"].startswith("Server returned: 400: ")
    assert '"status":"FAILED_PRECONDITION"' in state["message"]
    assert "Cannot send 'state' to agent 'bankingAgent'" in state["message"]
    snap = got["snapshotToClientManaged"]["thrown"]
    assert snap["message"].startswith("Server returned: 400: ")
    assert "Cannot use 'snapshotId' with agent 'signedBank'" in snap["message"]
    # an unknown snapshot is a failed turn (200), so the client raises it with its status
    unknown = got["unknownSnapshot"]["thrown"]
    assert (unknown["status"], unknown["message"]) == ("NOT_FOUND", "Snapshot no-such-snapshot not found.")


def test_signed_client_state_round_trips_unchanged(flow: Flow) -> None:
    got, bank = scenario(flow, "signed"), flow[1]
    turns = got["turns"]
    assert [t["finishReason"] for t in turns] == ["interrupted", "stop", "stop"]
    assert [t["text"] for t in turns[1:]] == [DONE, "You said: thanks (6 messages so far)"]
    assert all(t["snapshotId"] is None for t in turns)
    states = [t["state"] for t in turns]
    assert len({s["sessionId"] for s in states}) == 1
    assert all(isinstance(s["signature"], str) and len(s["signature"]) == 64 for s in states)
    assert len({s["signature"] for s in states}) == 3  # each turn signs its own state
    assert [len(s["messages"]) for s in states] == [2, 4, 6]
    # what the server received as init.state on turns 2 and 3 is exactly the last output's state
    inits = [b["init"] for b in bank.bodies("/signedBank") if "snapshotId" not in b.get("init", {})]
    assert inits[:3] == [{}, {"state": states[0]}, {"state": states[1]}]
    assert got["roles"] == ["user", "model", "tool", "model", "user", "model"]
    forged = got["forged"]["thrown"]
    assert forged["message"].startswith("Server returned: 403: ")
    assert (
        '"status":"PERMISSION_DENIED"' in forged["message"]
        and "unsigned or was modified" in forged["message"]
    )


def test_the_tool_ran_once_per_approval(flow: Flow) -> None:
    bank = flow[1]
    assert [(t.amount, t.toAccount) for t in bank.executed] == [
        (500, "savings")
    ] * 3  # restart, snapshots, signed


def test_detach_then_abort(flow: Flow) -> None:
    got = scenario(flow, "detachAbort")
    assert got["pending"]["snapshotId"] == got["snapshotId"] and got["pending"]["status"] == "pending"
    assert got["previous"] == "pending"
    assert got["final"]["status"] == "aborted" and got["final"]["snapshotId"] == got["snapshotId"]
    assert "work in the background" in flow[1].blocker_stopped


def test_closing_the_stream_aborts_the_turn_on_the_server(flow: Flow) -> None:
    got = scenario(flow, "streamAbort")
    assert got == {"firstChunk": "working", "finishReason": "aborted"}
    assert "work until I stop you" in flow[1].blocker_stopped
