"""Every async verb and its ``_sync`` twin: the same parameters and the same behaviour.

Structure: for each public class with async verbs, every verb has a twin with
exactly its parameters, and every ``_sync`` method has its verb. Behaviour: the
banking flow runs once through the async verbs and once through the twins, on a
local agent and on a remote one (a real uvicorn server), and gives the same
results. mypy checks twin calls (the twins are typed with ``ParamSpec``): a
wrong call to a twin is a type error.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import text_response, tool_call_response

import nb_agents as nba
from nb_agents.testing import ScriptedModel

CLASSES = [nba.BaseAgent, nba.Agent, nba.RemoteAgent, nba.Chat, nba.DetachedTask, nba.AgentConnection]
STREAMING = {nba.Chat: ["send_stream", "resume_stream"]}  # plain methods that return a stream


def async_verbs(cls: type) -> list[str]:
    return sorted(
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_")
        and (inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member))
    )


def params(fn: Callable[..., Any]) -> list[tuple[str, Any, Any, Any]]:
    sig = inspect.signature(fn, follow_wrapped=False)
    if list(sig.parameters) == ["self", "args", "kwargs"] and hasattr(fn, "__wrapped__"):
        sig = inspect.signature(fn.__wrapped__)  # made by _sync.twin: it takes the verb's parameters
    return [(p.name, p.kind, p.default, p.annotation) for p in sig.parameters.values()]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_async_verb_has_a_twin_with_its_parameters(cls: type) -> None:
    verbs = async_verbs(cls) + STREAMING.get(cls, [])
    assert verbs, f"{cls.__name__} has no async verbs?"
    for verb in verbs:
        twin = getattr(cls, f"{verb}_sync", None)
        assert twin is not None, f"{cls.__name__}.{verb} has no {verb}_sync"
        assert not inspect.iscoroutinefunction(twin)
        wrapped = getattr(twin, "__wrapped__", None)
        if wrapped is not None:  # built by twin(): from the verb of the same name
            assert wrapped.__name__ == verb
        assert params(twin) == params(getattr(cls, verb)), f"{cls.__name__}.{verb}_sync"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_twin_has_its_async_verb(cls: type) -> None:
    twins = [n for n, _ in inspect.getmembers(cls) if n.endswith("_sync") and not n.startswith("_")]
    verbs = set(async_verbs(cls)) | set(STREAMING.get(cls, []))
    assert sorted(t for t in twins if t.removesuffix("_sync") not in verbs) == []


def test_a_wrong_call_to_a_twin_is_a_type_error(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import nb_agents as nba
        from nb_agents.testing import ScriptedModel

        chat = nba.define_agent("a", model=ScriptedModel([])).chat()
        chat.send_sync("hi", config={"temperature": 0})
        chat.send_sync(42)
        chat.resume_sync(respond=[], bogus=True)
        """
    )
    probe = tmp_path / "probe.py"
    probe.write_text(code)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(probe)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(Path(nba.__file__).resolve().parent.parent)},
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("probe.py:") and ": error:" in line]
    assert [line.split(":")[1] for line in lines] == ["7", "8"], proc.stdout
    assert 'incompatible type "int"' in lines[0] and 'Unexpected keyword argument "bogus"' in lines[1]


# -- behaviour ----------------------------------------------------------------------------
def banking() -> tuple[nba.Agent, list[int]]:
    ran: list[int] = []

    @nba.tool(name="wire")
    async def wire(amount: int, ctx: nba.ToolContext) -> str:
        if not ctx.resumed:
            ctx.interrupt({"amount": amount})
        ran.append(amount)
        return f"wired {amount}"

    model = ScriptedModel(
        [tool_call_response(("wire", "w1", {"amount": 5})), text_response("wired!")] * 3
        + [text_response("bg")]
    )
    agent = nba.define_agent("bank", model=model, tools=[wire], store=nba.InMemorySessionStore())
    return agent, ran


class Caller:
    """Calls a verb the way `mode` says: awaited, or through its twin in a worker thread."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    async def __call__(self, obj: Any, verb: str, *args: Any, **kwargs: Any) -> Any:
        if self.mode == "async":
            return await getattr(obj, verb)(*args, **kwargs)
        twin = getattr(obj, f"{verb}_sync")
        return await asyncio.to_thread(twin, *args, **kwargs)


async def flow(agent: nba.BaseAgent, call: Caller, ran: list[int]) -> list[Any]:
    """The same story through every verb; the record holds what must not depend on the mode."""
    record: list[Any] = []
    out = await call(agent, "run_text", "wire 5")
    record.append(("run_text", out.finish_reason, [p.tool_request.name for p in out.interrupts()]))
    snap = await call(agent, "get_snapshot", out.snapshot_id)
    record.append(("get_snapshot", snap.status, snap.finish_reason))
    record.append(("abort", await call(agent, "abort", out.snapshot_id)))
    part = nba.AgentInterrupt(out.interrupts()[0]).restart(resumed=True)
    done = await call(
        agent, "run", nba.AgentInput(resume=nba.ToolResume(restart=[part])), snapshot_id=out.snapshot_id
    )
    record.append(("run", done.finish_reason, done.message.text, list(ran)))
    chat = agent.chat()
    res = await call(chat, "send", "wire 5", config={"temperature": 0})
    record.append(("send", res.finish_reason, len(res.interrupts)))
    res = await call(chat, "resume", restart=[res.interrupts[0].restart(resumed=True)])
    record.append(("resume", res.finish_reason, res.text, [m.role for m in chat.messages]))
    again = await call(chat, "send", "wire 5")
    with pytest.raises(nba.AgentError) as info:
        await call(
            chat, "resume", respond=[again.interrupts[0].respond("a"), again.interrupts[0].respond("b")]
        )
    record.append(("resume refused", info.value.status))
    record.append(("chat.abort", await call(chat, "abort")))
    if isinstance(agent, nba.Agent):
        pending = await call(agent, "pending")
        record.append(("pending", len(pending)))
        trail = await call(agent, "audit", done.session_id)
        record.append(("audit", [(r.name, r.kind) for r in trail]))
    task = await call(chat, "detach", "go on")
    final = await call(task, "wait", interval=0.01, timeout=10)
    record.append(("detach", final.status, (await call(task, "poll")).status, await call(task, "abort")))
    return record


@pytest.fixture
def live_url() -> Iterator[Callable[[nba.Agent], str]]:
    from server.live import LiveServer

    from nb_agents.server import create_app

    servers: list[LiveServer] = []

    def start(agent: nba.Agent) -> str:
        server = LiveServer(create_app(agent))
        server.start()
        servers.append(server)
        return f"{server.url}/{agent.name}"

    yield start
    for server in servers:
        server.stop()


@pytest.mark.parametrize("where", ["local", "remote"])
def test_the_twins_behave_as_the_verbs(where: str, live_url: Callable[[nba.Agent], str]) -> None:
    records = []
    for mode in ("async", "sync"):
        agent, ran = banking()
        target: nba.BaseAgent = agent if where == "local" else nba.remote_agent(live_url(agent))
        records.append(asyncio.run(flow(target, Caller(mode), ran)))
    assert records[0] == records[1]
    assert ("resume refused", "INVALID_ARGUMENT") in records[0]


def test_connection_twins_behave_as_the_verbs() -> None:
    async def through(mode: str) -> list[Any]:
        agent, ran = banking()
        got: list[Any] = []
        async with agent.connect() as conn:
            conn.send_text("wire 5")
            if mode == "async":
                chunks = [c async for c in conn.receive()]
            else:
                chunks = await asyncio.to_thread(lambda: list(conn.receive_sync()))
            got.append([c.turn_end.finish_reason for c in chunks if c.turn_end])
            parts = [p for c in chunks if c.model_chunk for p in c.model_chunk.interrupts()]
            conn.send_resume(nba.ToolResume(restart=[nba.AgentInterrupt(parts[0]).restart(resumed=True)]))
            out = await conn.output() if mode == "async" else await asyncio.to_thread(conn.output_sync)
        got.append((out.finish_reason, out.message.text if out.message else None, ran))
        return got

    assert (
        asyncio.run(through("async"))
        == asyncio.run(through("sync"))
        == [["interrupted"], ("stop", "wired!", [5])]
    )


def test_abort_sync_from_another_thread_under_asyncio_debug() -> None:
    """`chat.abort_sync()` hands the abort to the loop running the turn (asyncio is not thread-safe)."""
    started = asyncio.Event()

    async def slow(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
        started.set()
        await ctx.abort_signal.wait()
        return "never"

    async def main() -> tuple[str, Any]:
        chat = nba.define_custom_agent("slow", slow, store=nba.InMemorySessionStore()).chat()
        turn = asyncio.ensure_future(chat.send("go"))
        await started.wait()
        previous = await asyncio.to_thread(chat.abort_sync)
        res = await asyncio.wait_for(turn, 10)
        return res.finish_reason, previous

    assert asyncio.run(main(), debug=True) == ("aborted", "pending")
