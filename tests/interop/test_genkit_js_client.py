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


def test_init_misuse_surfaces_the_server_error_with_its_status(flow: Flow) -> None:
    got = scenario(flow, "misuse")
    # a stream answers misuse as Genkit's servers do: 200 and an error frame, whose status the
    # client reads from its "STATUS: message" (a 400 would be reported as UNKNOWN); the
    # "\nundefined" is the client's own, for an error frame without details
    assert got["stateToServerManaged"]["thrown"] == {
        "name": "AgentError",
        "status": "FAILED_PRECONDITION",
        "message": "FAILED_PRECONDITION: Cannot send 'state' to agent 'bankingAgent': this agent uses a "
        "server-managed store. Send 'snapshotId' or 'sessionId' instead.\nundefined",
    }
    snap = got["snapshotToClientManaged"]["thrown"]
    assert (snap["name"], snap["status"]) == ("AgentError", "FAILED_PRECONDITION")
    assert snap["message"].startswith("FAILED_PRECONDITION: Cannot use 'snapshotId' with agent 'signedBank'")
    # detach() hands the transport's error through unwrapped (a plain Error, no .status), with
    # the status in front of the message
    detach = got["detachToClientManaged"]["thrown"]
    assert detach == {
        "name": "Error",
        "status": None,
        "message": "FAILED_PRECONDITION: Detach is only supported when a session store is provided."
        "\nundefined",
    }
    # an unknown snapshot is a failed turn (200, finishReason failed): the client shows the
    # output's error message, which carries Genkit's status prefix as a Genkit JS server's does
    unknown = got["unknownSnapshot"]["thrown"]
    assert (unknown["status"], unknown["message"]) == (
        "NOT_FOUND",
        "NOT_FOUND: Snapshot no-such-snapshot not found.",
    )


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
    assert (forged["name"], forged["status"]) == ("AgentError", "PERMISSION_DENIED")
    assert forged["message"].startswith("PERMISSION_DENIED: The state sent to agent 'signedBank' is unsigned")


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


@pytest.mark.parametrize("agent", ["failing", "refusing"])
def test_a_stream_that_fails_after_its_chunks_leaves_node_running(
    genkit_js: Path, tmp_path: Path, agent: str
) -> None:
    """The error frame after streamed chunks, in a default Node process.

    Genkit JS 1.42's client leaves a promise rejected, unhandled, when the last chunk
    and the error frame arrive in one read, and a default Node process dies of it
    (exit status 1: `run_json` fails). The script has no 'unhandledRejection' handler.
    The store's own status reaches the client whether it takes no write at all
    (``failing``) or refuses only the turn's row and records the failure (``refusing``).
    """
    bank, server = serve_bank(tmp_path)
    try:
        got = run_json(["node", genkit_js / "stream_error.mjs", bank.url, "10", agent], cwd=genkit_js)
    finally:
        server.stop()
    error = {
        "name": "AgentError",
        "status": "UNAVAILABLE",
        "message": "UNAVAILABLE: the session store is down\nundefined",
    }
    # every chunk reaches the client before the error, and both the stream and the response fail
    # with the error's status
    assert (
        got["streamed"]
        == [{"texts": ["one ", "two ", "three"], "streamError": error, "responseError": error}] * 10
    )
    assert got["sent"] == [{"sendError": error}] * 10
