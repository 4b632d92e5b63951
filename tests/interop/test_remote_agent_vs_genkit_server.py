"""nb_agents' `remote_agent` driving real Genkit agent servers, each a subprocess on 127.0.0.1:

* ``python``: PyPI ``genkit`` 0.12.0 served by ``genkit_fastapi.serve_agent``
  (``genkit_py/genkit_server.py``, in the interop virtualenv);
* ``js``: npm ``genkit`` 1.42.0 served by ``@genkit-ai/express`` 1.42.0
  (``js/genkit_server.cjs``, CommonJS, from the committed lock file).

Both serve the same agent: an interrupt (``define_interrupt`` / ``defineInterrupt``), a
tool that pauses until it is restarted with approval, a store, and a zero-latency
scripted model registered in Genkit. Every test runs against both; where the two
Genkit runtimes answer differently, the test says which does what. Our chat sends, sees
``res.interrupts``, resumes with respond and with restart, streams, reads snapshots,
detaches and aborts.
"""

from __future__ import annotations

import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import nb_agents as nba
from nb_agents.errors import AgentError, FailedPreconditionError, NbAgentsError
from nb_agents.remote import RemoteAgent, remote_agent

from .nb_apps import DONE, QUESTION, TRANSFER

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
START_TIMEOUT = 60.0  # seconds for Genkit's imports and the server; a bound, not a timing assertion


class GenkitServer:
    def __init__(self, kind: str, url: str, ledger: Path) -> None:
        self.kind = kind
        self.url = url
        self.ledger = ledger

    def agent(self) -> RemoteAgent:
        return remote_agent(f"{self.url}/bankingAgent")

    def transfers(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []


def server_command(request: pytest.FixtureRequest, kind: str, ledger: Path) -> tuple[list[str], Path | None]:
    """The command line of one Genkit server, and the folder to run it in (installs it once)."""
    if kind == "python":
        python: Path = request.getfixturevalue("genkit_python")
        return [str(python), str(HERE / "genkit_py" / "genkit_server.py"), str(ledger)], None
    folder: Path = request.getfixturevalue("genkit_js")
    return ["node", "genkit_server.cjs", str(ledger)], folder


@pytest.fixture(scope="module", params=["python", "js"])
def genkit_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GenkitServer]:
    kind: str = request.param
    tmp = tmp_path_factory.mktemp(f"genkit-{kind}-server")
    cmd, cwd = server_command(request, kind, tmp / "ledger.txt")
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        assert proc.stdout is not None
        deadline, line = time.monotonic() + START_TIMEOUT, ""
        while not line.startswith("PORT "):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"the Genkit {kind} server did not start:\n{(tmp / 'server.log').read_text()}"
                )
            if select.select([proc.stdout], [], [], 0.1)[0]:
                line = proc.stdout.readline()
        yield GenkitServer(kind, f"http://127.0.0.1:{int(line.split()[1])}", tmp / "ledger.txt")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()  # the pipe it printed its port on
        log.close()


async def test_respond_to_an_interrupt(genkit_server: GenkitServer) -> None:
    chat = genkit_server.agent().chat()
    res = await chat.send("Please confirm closing the old account.")
    assert res.finish_reason == "interrupted" and res.text == ""
    [pause] = res.interrupts
    assert (pause.name, pause.ref, pause.input) == ("userApproval", "q1", QUESTION)
    assert res.snapshot_id and res.session_id and chat.snapshot_id == res.snapshot_id

    done = await chat.resume(respond=[pause.respond({"approved": True, "note": "go ahead"})])
    assert done.finish_reason == "stop" and done.interrupts == []
    assert done.text == 'You answered {"approved": true, "note": "go ahead"}.'
    assert done.session_id == res.session_id and done.snapshot_id not in (None, res.snapshot_id)
    assert chat.snapshot_id == done.snapshot_id
    assert genkit_server.transfers() == []


async def test_restart_with_approval_runs_the_tool_once_and_streams(genkit_server: GenkitServer) -> None:
    chat = genkit_server.agent().chat()
    turn = chat.send_stream("Transfer $500 to my savings account.")
    kinds = [
        ("turnEnd", c.turn_end.finish_reason)
        if c.turn_end
        else (c.model_chunk and c.model_chunk.role, c.text)
        async for c in turn
    ]
    res = await turn.response
    # Genkit JS streams the synthetic role:tool chunk holding the interrupt before turnEnd;
    # Genkit Python's server ends an interrupted turn with turnEnd alone (the interrupt comes
    # with the result)
    synthetic = [("tool", "")] if genkit_server.kind == "js" else []
    assert kinds == [*synthetic, ("turnEnd", "interrupted")]
    [pause] = res.interrupts
    assert (pause.name, pause.ref, pause.input) == ("transferMoney", "t1", TRANSFER)
    assert pause.data == {"details": "Transfer $500.00 to savings"}

    turn = chat.resume_stream(restart=[pause.restart(resumed={"approved": True})])
    chunks = [(c.model_chunk.role if c.model_chunk else "turnEnd", c.text) async for c in turn]
    done = await turn.response
    assert chunks == [("tool", ""), ("model", "Done: "), ("model", "transaction txn-123."), ("turnEnd", "")]
    assert done.finish_reason == "stop" and done.text == DONE
    assert genkit_server.transfers() == ["500 savings"]

    # the chat goes on from the resumed snapshot
    more = await chat.send("thanks")
    assert more.finish_reason == "stop" and more.text.startswith("You said: thanks (")
    assert more.session_id == res.session_id
    assert genkit_server.transfers() == ["500 savings"]


async def test_snapshots_and_abort(genkit_server: GenkitServer) -> None:
    agent = genkit_server.agent()
    chat = agent.chat()
    paused = await chat.send("Transfer $500 to my savings account.")
    [pause] = paused.interrupts
    done = await chat.resume(restart=[pause.restart(resumed={"approved": True})])

    snap = await agent.get_snapshot(done.snapshot_id)
    assert snap is not None and snap.snapshot_id == done.snapshot_id
    assert (snap.status, snap.finish_reason) == ("completed", "stop")
    assert snap.session_id == done.session_id and snap.parent_id == paused.snapshot_id
    assert snap.state is not None
    assert [m.role for m in snap.state.messages] == ["user", "model", "tool", "model"]
    assert snap.state.messages[2].content[0].tool_response.output == {  # type: ignore[union-attr]
        "success": True,
        "transactionId": "txn-123",
    }
    by_session = await agent.get_snapshot(session_id=done.session_id)
    assert by_session is not None and by_session.snapshot_id == done.snapshot_id
    first = await agent.get_snapshot(paused.snapshot_id)
    assert first is not None and (first.status, first.finish_reason) == ("completed", "interrupted")
    assert await agent.get_snapshot("no-such-snapshot") is None  # Genkit answers a bare 404

    assert await agent.abort(done.snapshot_id) == "completed"  # the status before the call
    assert await chat.abort() == "completed"


async def test_detach_then_abort(genkit_server: GenkitServer) -> None:
    agent = genkit_server.agent()
    task = await agent.chat().detach("do it slowly")
    snap = await task.poll()
    assert snap is not None and snap.status == "pending" and snap.snapshot_id == task.snapshot_id
    assert await task.abort() == "pending"
    final = await task.wait(interval=0.05, timeout=30)
    assert final.status == "aborted"
    assert await agent.abort(task.snapshot_id) == "aborted"


async def test_a_plain_restart_of_a_tool_that_pauses_again_re_pauses(genkit_server: GenkitServer) -> None:
    if genkit_server.kind == "js":
        pytest.skip(
            "Genkit JS 1.42 bug: a restarted tool that interrupts again fails the turn with INTERNAL "
            "\"Cannot read properties of undefined (reading 'tools')\" (generate's revisedRequest is "
            "undefined) instead of re-pausing"
        )
    before = genkit_server.transfers()
    chat = genkit_server.agent().chat()
    res = await chat.send("Transfer $500 to my savings account.")
    [pause] = res.interrupts
    again = await chat.resume(restart=[pause.restart()])  # no `resumed`: the tool pauses again
    assert again.finish_reason == "interrupted"
    assert [(i.name, i.ref) for i in again.interrupts] == [("transferMoney", "t1")]
    assert genkit_server.transfers() == before
    done = await chat.resume(restart=[again.interrupts[0].restart(resumed={"approved": True})])
    assert done.finish_reason == "stop" and done.text == DONE
    assert genkit_server.transfers() == [*before, "500 savings"]


async def test_errors_surface_with_their_status(genkit_server: GenkitServer) -> None:
    agent = genkit_server.agent()
    # a failed turn (200, finishReason failed) raises the chat's AgentError with Genkit's status,
    # the status shown once (Genkit JS writes the message as "NOT_FOUND: Snapshot ... not found")
    with pytest.raises(AgentError) as failed:
        await agent.chat(snapshot_id="no-such-snapshot").send("hello")
    assert failed.value.status == "NOT_FOUND" and "no-such-snapshot" in failed.value.message
    assert not failed.value.message.startswith("NOT_FOUND")
    assert str(failed.value) == f"NOT_FOUND: {failed.value.message}"
    out = await agent.run_text("hello", snapshot_id="no-such-snapshot")  # the run API: in-band
    assert out.finish_reason == "failed" and out.error is not None and out.error.status == "NOT_FOUND"
    assert out.error.message == failed.value.message
    with pytest.raises(NbAgentsError) as refused:
        await agent.chat(state=nba.SessionState(messages=[])).send("hello")
    if genkit_server.kind == "js":
        # express streams the thrown error as a terminal `error:` frame with its status
        assert isinstance(refused.value, FailedPreconditionError)
        assert refused.value.message == (
            "Cannot send 'state' to agent 'bankingAgent': this agent uses a server-managed store. "
            "Send 'snapshotId' or 'sessionId' instead."
        )
    else:
        # Genkit FastAPI 0.12 answers every thrown error 500 INTERNAL with the message "None",
        # so all a client can tell is that the server refused
        assert refused.value.status == "INTERNAL"
