"""Approval rules over HTTP: approve(always=True) from a remote client, kept across a server restart.

The server is a real ``python -m nb_agents serve`` process on a SQLite file;
it is stopped and a new one started on the same file, and the rule made
through the first still answers the session's calls through the second.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest

import nb_agents as nba
from nb_agents.remote import remote_agent

APP = """
import nb_agents as nba
from nb_agents.testing import FunctionModel

def answer(request):
    last = request.messages[-1]
    if last.role == "tool":
        return "tool said: " + str(last.content[0].tool_response.output)
    return {"message": {"role": "model", "content": [{"toolRequest": {
        "name": "readTable", "ref": f"c{len(request.messages)}", "input": {"table": last.text}}}]},
        "finishReason": "stop"}

@nba.tool(name="readTable")
def read_table(table: str) -> str:
    return f"rows of {table}"

agent = nba.define_agent("tables", model=FunctionModel(answer), tools=[read_table],
                         store=nba.InMemorySessionStore(),
                         use=[nba.middleware.ToolApproval(rules=[
                             nba.ApprovalRule("readTable", when=lambda i: i["table"] == "public")])])
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def served(tmp_path: Path, db: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nb_agents",
            "serve",
            "rulesapp:agent",
            "--port",
            str(port),
            "--store",
            f"sqlite:///{db}",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(base + "/", timeout=2)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the server did not come up: {proc.communicate()[0]}") from None
                time.sleep(0.1)
        yield base + "/tables"
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_an_always_answer_sent_over_http_makes_a_rule_that_survives_a_server_restart(tmp_path: Path) -> None:
    (tmp_path / "rulesapp.py").write_text(APP)
    db = tmp_path / "served.db"
    with served(tmp_path, db) as url:
        chat = remote_agent(url).chat()
        assert chat.send_sync("public").text == "tool said: rows of public"  # the static rule allowed it
        held = chat.send_sync("sales")
        assert held.finish_reason == "interrupted"
        res = chat.resume_sync(
            restart=[held.interrupts[0].approve(always=True)], metadata={"answeredBy": "ana"}
        )
        assert res.text == "tool said: rows of sales"
        sid = chat.session_id
        assert sid
        # the private bookkeeping stays off the wire: a snapshot read over HTTP has no rules field
        snap = remote_agent(url).get_snapshot_sync(session_id=sid)
        assert snap is not None and "rules" not in snap.to_wire()

    with served(tmp_path, db) as url:  # a new server process on the same database
        chat = remote_agent(url).chat(session_id=sid)
        again = chat.send_sync("costs")
        assert again.finish_reason == "stop" and again.text == "tool said: rows of costs"
        [listed] = chat.rules_sync()  # listed and revoked over HTTP too
        assert (listed.tool, listed.created_by) == ("readTable", "ana")
        assert remote_agent(url).revoke_rule_sync(sid, listed.id) == listed
        assert chat.rules_sync() == []
        assert chat.send_sync("costs").finish_reason == "interrupted"
        with pytest.raises(nba.NotFoundError, match="has no approval rule"):
            chat.revoke_rule_sync(listed.id)

    store = nba.SqliteSessionStore(db)
    trail = anyio.run(store.audit, sid)
    [rule] = [r for r in trail if r.kind == "rule-created"]
    used = [(r.name, r.answer["rule"]) for r in trail if r.kind == "rule"]
    assert used == [("readTable", "allow:readTable"), ("readTable", rule.answer["rule"])]
    assert [r.answer["rule"] for r in trail if r.kind == "rule-revoked"] == [rule.answer["rule"]]
    assert rule.answered_by == "ana"
    store.close()
