"""``nb-agents serve``: targets, ``--store`` URLs, errors, and a real run of ``python -m nb_agents``."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

import nb_agents as nba
from nb_agents.__main__ import main
from nb_agents.remote import remote_agent
from nb_agents.server import cli
from nb_agents.server.cli import CliError, build_app, load_target, parse_store_url
from nb_agents.testing import FunctionModel

APP = """
import nb_agents as nba
from nb_agents.testing import FunctionModel

echo = nba.define_agent("echo", model=FunctionModel(lambda r: f"n={len(r.messages)}"),
                        store=nba.InMemorySessionStore())
client = nba.define_agent("client", model=FunctionModel(lambda r: "ok"))
both = [echo, client]
"""


def test_store_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert isinstance(parse_store_url("memory://"), nba.InMemorySessionStore)
    relative = parse_store_url("sqlite:///agents.db")  # SQLAlchemy style: three slashes, relative
    assert isinstance(relative, nba.SqliteSessionStore) and relative.path == "agents.db"
    absolute = parse_store_url(f"sqlite:///{tmp_path}/abs.db")  # four slashes: absolute
    assert isinstance(absolute, nba.SqliteSessionStore) and absolute.path == f"{tmp_path}/abs.db"
    files = parse_store_url(f"file://{tmp_path}/sessions")
    assert isinstance(files, nba.FileSessionStore) and files.directory == tmp_path / "sessions"
    assert parse_store_url("file://relative").directory == Path("relative")  # type: ignore[attr-defined]
    for bad, message in [
        ("agents.db", "is not a URL"),
        ("sqlite:///", "needs a file path"),
        ("file://", "needs a directory"),
        ("redis://localhost", "scheme 'redis' is not supported"),
    ]:
        with pytest.raises(CliError, match=message):
            parse_store_url(bad)


def test_targets_load_from_modules_and_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cliapp.py").write_text(APP)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_target("cliapp:echo").name == "echo"
    assert [a.name for a in load_target(f"{tmp_path / 'cliapp.py'}:both")] == ["echo", "client"]
    with pytest.raises(CliError, match="not of the form module:attribute"):
        load_target("cliapp")
    with pytest.raises(CliError, match="has no attribute 'nope'"):
        load_target("cliapp:nope")
    with pytest.raises(CliError, match="could not import 'no_such_module_here'"):
        load_target("no_such_module_here:x")


def test_store_replaces_only_the_stores_of_store_backed_agents() -> None:
    backed = nba.define_agent("backed", model=FunctionModel(lambda r: "x"), store=nba.InMemorySessionStore())
    clientside = nba.define_agent("clientside", model=FunctionModel(lambda r: "x"))
    app, agents = build_app([backed, clientside], store="memory://")
    assert agents == [backed, clientside]
    assert isinstance(backed.store, nba.InMemorySessionStore) and clientside.store is None
    with pytest.raises(CliError, match="no agent has a store"):
        build_app(clientside, store="memory://")
    with pytest.raises(CliError, match="the target is an ASGI app"):
        build_app(app, store="memory://")
    assert build_app(app) == (app, [])
    with pytest.raises(CliError, match="expected an Agent, a list of agents or an ASGI app"):
        build_app(42)


def test_serve_bounds_sessions_kept_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, ``nb-agents serve`` kept every session of an in-memory store forever."""
    own = nba.define_agent("own", model=FunctionModel(lambda r: "x"), store=nba.InMemorySessionStore())
    build_app(own)
    assert own.store is not None
    assert (own.store.max_sessions, own.store.ttl) == (10_000, timedelta(days=1))  # type: ignore[attr-defined]
    assert (cli.DEFAULT_MAX_SESSIONS, cli.DEFAULT_SESSION_TTL) == (10_000, 86_400)
    build_app(own, store="memory://", max_sessions=5, session_ttl=None)
    assert (own.store.max_sessions, own.store.ttl) == (5, None)  # type: ignore[attr-defined]
    chosen = nba.InMemorySessionStore(ttl=60)  # bounds of its own are kept
    kept = nba.define_agent("kept", model=FunctionModel(lambda r: "x"), store=chosen)
    build_app(kept)
    assert (chosen.max_sessions, chosen.ttl) == (None, timedelta(seconds=60))
    (tmp_path / "boundapp.py").write_text(APP)
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "boundapp:echo", "--max-sessions", "-1"]) == 2
    assert "max_sessions must be 1 or more" in capsys.readouterr().err


def test_serve_help_says_the_session_bounds() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "nb_agents", "serve", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "--max-sessions" in out and "default 10000; 0: no bound" in out
    assert "--session-ttl" in out and "default 86400, a day; 0: no bound" in " ".join(out.split())


def test_main_reports_mistakes_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "no_such_module_here:agent"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nb-agents: error: could not import 'no_such_module_here'")
    assert "Traceback" not in err


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_python_m_nb_agents_serve_runs_a_real_server(tmp_path: Path) -> None:
    (tmp_path / "cliapp.py").write_text(APP)
    port = free_port()
    db = tmp_path / "served.db"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nb_agents",
            "serve",
            "cliapp:both",
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
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                listing = httpx.get(base + "/", timeout=2).json()
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the server did not come up: {proc.communicate()[0]}") from None
                time.sleep(0.1)
        assert [a["name"] for a in listing["agents"]] == ["echo", "client"]
        chat = remote_agent(base + "/echo").chat()
        assert chat.send_sync("hi").text == "n=1"
        res = chat.send_sync("again")
        assert res.text == "n=3"
        stored = nba.SqliteSessionStore(db).get_snapshot  # the --store database holds the turns
        import anyio

        snap = anyio.run(stored, res.snapshot_id)
        assert snap is not None and len(snap.state.messages) == 4  # type: ignore[union-attr]
        assert remote_agent(base + "/client").run_text_sync("x").state is not None
    finally:
        proc.terminate()
        output = proc.communicate(timeout=30)[0]
    assert (
        f"nb-agents: echo at http://127.0.0.1:{port}/echo (server-managed state in SqliteSessionStore)"
        in output
    )
    assert f"nb-agents: client at http://127.0.0.1:{port}/client (client-managed state)" in output
