"""Scale-out: two ``nb-agents serve`` processes sharing one PostgreSQL database.

The processes (``python -m nb_agents serve scale_app:agent --store postgresql://...``,
each on its own port of 127.0.0.1) stand for two replicas behind a load balancer: a
chat started on one is resumed on the other by snapshot id, and two simultaneous
resumes of one interrupt, one sent to each process, run the tool exactly once
(``scale_app`` appends a ledger line per transfer) and answer alike.

PostgreSQL comes from tests/pg.py (skipped without it, a failure under ``CI=true``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pg
import pytest

from nb_agents.errors import AgentError
from nb_agents.remote import remote_agent
from nb_agents.server.cli import CliError, parse_store_url

from .scale_app import TRANSFER

HERE = Path(__file__).resolve().parent
START_TIMEOUT = 60.0  # seconds for a server process to answer; a bound, not a timing assertion


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Replicas:
    urls: list[str]
    ledger: Path

    def agent(self, i: int) -> Any:
        return remote_agent(f"{self.urls[i]}/bankingAgent")

    def transfers(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []


@pytest.fixture(scope="module")
def pg_url() -> str:
    dsn = pg.fresh_dsn()  # starts the throwaway server: skips without PostgreSQL, fails under CI
    from psycopg.conninfo import conninfo_to_dict

    p = conninfo_to_dict(dsn)
    return f"postgresql://{p['user']}@{p['host']}:{p['port']}/{p['dbname']}?connect_timeout=10"


@pytest.fixture(scope="module")
def replicas(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    tmp = tmp_path_factory.mktemp("scale-out")
    env = {**os.environ, "NB_AGENTS_LEDGER": str(tmp / "ledger.txt"), "PYTHONUNBUFFERED": "1"}
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    urls = []
    try:
        for i in range(2):
            port, log = _free_port(), tmp / f"server-{i}.log"
            with open(log, "wb") as out:
                cmd = [sys.executable, "-m", "nb_agents", "serve", "scale_app:agent", "--port", str(port)]
                proc = subprocess.Popen(
                    [*cmd, "--store", pg_url, "--log-level", "warning"],
                    cwd=HERE,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            procs.append((proc, log))
            urls.append(f"http://127.0.0.1:{port}")
        for (proc, log), url in zip(procs, urls, strict=True):
            _wait_ready(proc, log, url)
        yield Replicas(urls, tmp / "ledger.txt")
    finally:
        for proc, _ in procs:
            proc.terminate()
        for proc, _ in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_ready(proc: subprocess.Popen[bytes], log: Path, url: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"nb-agents serve at {url} did not start:\n{log.read_text()}")
        try:
            if httpx.get(url + "/", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.05)


def test_store_urls_name_postgres() -> None:
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[postgres]')")
    from nb_agents.stores.postgres import PostgresSessionStore

    for url in [
        "postgresql://app:s3cret@db.internal:5433/agents",
        "postgres://app:s3cret@db.internal:5433/agents",
    ]:
        store = parse_store_url(url)  # connects on first use, not here
        assert isinstance(store, PostgresSessionStore)
        assert repr(store) == "PostgresSessionStore('host=db.internal port=5433 dbname=agents user=app')"
    with pytest.raises(CliError, match='invalid URI query parameter: "bogus"') as bad:
        parse_store_url("postgresql://app:s3cret@db.internal/agents?bogus=1")
    assert "s3cret" not in str(bad.value)
    with pytest.raises(CliError, match="scheme 'mysql' is not supported; use memory://, .* or postgresql://"):
        parse_store_url("mysql://db/agents")


@pytest.mark.anyio
async def test_a_chat_started_on_one_process_resumes_on_the_other(replicas: Replicas) -> None:
    before = replicas.transfers()
    first = replicas.agent(0).chat()
    paused = await first.send("Transfer $500 to my savings account.")
    assert paused.finish_reason == "interrupted"
    [pause] = paused.interrupts
    assert (pause.name, pause.input) == ("transferMoney", TRANSFER)

    # the other process finds the snapshot in the shared database
    other = replicas.agent(1)
    done = await other.chat(snapshot_id=paused.snapshot_id).resume(
        restart=[pause.restart(resumed={"approved": True})]
    )
    assert done.finish_reason == "stop" and done.text == "Done: transaction txn-123."
    assert done.session_id == paused.session_id
    assert len(replicas.transfers()) == len(before) + 1

    # each process reads what the other wrote
    for i in range(2):
        snap = await replicas.agent(i).get_snapshot(done.snapshot_id)
        assert snap is not None and snap.status == "completed" and snap.parent_id == paused.snapshot_id
        assert snap.state is not None and [m.role for m in snap.state.messages] == [
            "user",
            "model",
            "tool",
            "model",
        ]
    # and the first process continues the session from the leaf the second one wrote
    more = await replicas.agent(0).chat(session_id=paused.session_id).send("thanks")
    assert more.text == "You said: thanks (6 messages so far)"  # system, 4 earlier messages, this one
    leaf = await replicas.agent(1).get_snapshot(session_id=paused.session_id)
    assert leaf is not None and leaf.snapshot_id == more.snapshot_id and leaf.parent_id == done.snapshot_id


@pytest.mark.anyio
async def test_simultaneous_resumes_on_two_processes_run_the_tool_once(replicas: Replicas) -> None:
    before = replicas.transfers()
    paused = await replicas.agent(0).chat().send("Transfer $500 to my savings account.")
    [pause] = paused.interrupts
    answer = pause.restart(resumed={"approved": True})

    results: list[Any] = [None, None]

    async def resume(i: int) -> None:
        chat = replicas.agent(i).chat(snapshot_id=paused.snapshot_id)
        results[i] = await chat.resume(restart=[answer])

    async with anyio.create_task_group() as group:  # one request to each process, at once
        group.start_soon(resume, 0)
        group.start_soon(resume, 1)

    added = replicas.transfers()[len(before) :]
    assert len(added) == 1 and added[0].startswith("500 savings pid=")
    a, b = results
    assert (a.finish_reason, a.text) == (b.finish_reason, b.text) == ("stop", "Done: transaction txn-123.")
    assert a.snapshot_id == b.snapshot_id and a.snapshot_id != paused.snapshot_id

    # a later identical resend, to either process, replays that result; a different answer is refused
    again = await replicas.agent(1).chat(snapshot_id=paused.snapshot_id).resume(restart=[answer])
    assert again.snapshot_id == a.snapshot_id
    with pytest.raises(AgentError) as refused:
        await (
            replicas.agent(0)
            .chat(snapshot_id=paused.snapshot_id)
            .resume(restart=[pause.restart(resumed={"approved": False})])
        )
    assert refused.value.status == "FAILED_PRECONDITION" and "already resumed" in refused.value.message
    assert replicas.transfers()[len(before) :] == added
