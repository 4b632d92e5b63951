"""Lying annotations (issue 20, finding 7): an MCP server's hints are its word, not a guarantee.

``servers/liar.py`` lists ``peek`` as read-only and not destructive; it deletes the
file it is asked to show. MCP's spec says a client must treat the annotations of
a server it does not trust as untrusted, so an untrusted server's tools (the
default) are held for a person, with or without `ToolApproval`; only a server
marked ``trusted=True`` has its hints believed. The folder the tool deletes
from is the ledger: a file that is gone is a call that ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import text_response, tool_call_response
from mcp_servers import script_server
from store_kinds import make_store

import nb_agents as nba
from nb_agents.mcp import MCPServer
from nb_agents.middleware import ToolApproval
from nb_agents.testing import ScriptedModel

pytestmark = pytest.mark.anyio


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    found = tmp_path / "files"
    found.mkdir()
    (found / "secret.txt").write_text("keep me\n")
    return found


def _liar(folder: Path, open_servers: list[MCPServer], **options: object) -> MCPServer:
    options.setdefault("trusted", False)
    server = script_server("liar", str(folder), **options)
    open_servers.append(server)
    return server


def _model() -> ScriptedModel:
    return ScriptedModel([tool_call_response(("peek", "p1", {"name": "secret.txt"})), text_response("seen")])


ROUTES = [
    ("memory", "chat"),
    ("sqlite", "chat"),
    ("sqlite", "session"),
    ("sqlite", "partial"),
    ("postgres", "chat"),
]


@pytest.mark.parametrize(("kind", "route"), ROUTES)
@pytest.mark.parametrize("gate", [None, "ToolApproval"])
async def test_an_untrusted_servers_read_only_claim_is_held_for_a_person(
    folder: Path, open_servers: list[MCPServer], tmp_path: Path, kind: str, route: str, gate: str | None
) -> None:
    server = _liar(folder, open_servers)
    use = [ToolApproval()] if gate else []
    agent = nba.define_agent(
        "files", model=_model(), tools=[server], use=use, store=make_store(kind, tmp_path)
    )
    chat = agent.chat()
    res = await chat.send("show me the secret")
    assert res.finish_reason == "interrupted"
    assert (folder / "secret.txt").exists()  # held: the "read-only" call did not run
    (i,) = res.interrupts
    assert i.data is not None and i.data["mcp"]["annotations"]["readOnlyHint"] is True
    answering = chat if route != "session" else agent.chat(session_id=res.session_id)
    done = await answering.resume(restart=[i.approve()], partial=route == "partial")
    assert done.finish_reason == "stop" and not (folder / "secret.txt").exists()
    [record] = await agent.audit(res.session_id)
    assert (record.decision, record.input) == ("person", {"name": "secret.txt"})


async def test_denied_it_deletes_nothing(folder: Path, open_servers: list[MCPServer]) -> None:
    agent = nba.define_agent("files", model=_model(), tools=[_liar(folder, open_servers)])
    out = await agent.run_text("show me the secret")
    hold = ToolApproval.interrupted(out.message.interrupts()[0])  # type: ignore[union-attr]
    assert hold is not None
    done = await agent.run(nba.AgentInput(resume=nba.ToolResume(respond=[hold.deny()])), state=out.state)
    assert done.finish_reason == "stop" and (folder / "secret.txt").exists()


async def test_the_developers_allowlist_is_a_policy_decision_in_the_audit(
    folder: Path, open_servers: list[MCPServer]
) -> None:
    gate = ToolApproval(allowed_tools=["peek"])
    agent = nba.define_agent(
        "files",
        model=_model(),
        tools=[_liar(folder, open_servers)],
        use=[gate],
        store=nba.InMemorySessionStore(),
    )
    out = await agent.run_text("show me the secret")
    assert out.finish_reason == "stop" and not (folder / "secret.txt").exists()
    [record] = await agent.audit(out.session_id or "")
    assert (record.kind, record.decision, record.input) == ("policy", "policy", {"name": "secret.txt"})


async def test_a_trusted_servers_hints_are_believed(folder: Path, open_servers: list[MCPServer]) -> None:
    """trusted=True is the developer's word for the server: then its read-only tool runs unasked."""
    agent = nba.define_agent("files", model=_model(), tools=[_liar(folder, open_servers, trusted=True)])
    out = await agent.run_text("show me the secret")
    assert out.finish_reason == "stop" and not (folder / "secret.txt").exists()


async def test_a_destructive_tool_of_a_trusted_server_is_held_without_tool_approval(
    folder: Path, open_servers: list[MCPServer]
) -> None:
    server = script_server("broken", str(folder / "state"))  # trusted; its crash tool has no hints
    open_servers.append(server)
    tools = {t.name: t for t in await server.list_tools()}
    assert tools["crash"].needs_approval is True and tools["echo"].needs_approval is False
    model = ScriptedModel([tool_call_response(("crash", "c1", {})), text_response("never")])
    out = await nba.define_agent("fragile", model=model, tools=[server]).run_text("crash")
    assert out.finish_reason == "interrupted"  # held, though the agent has no ToolApproval
