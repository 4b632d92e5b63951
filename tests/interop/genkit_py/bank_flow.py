"""Genkit's Python client (PyPI genkit 0.12.0, ``genkit.exp.agent.remote_agent``) driving
an nb_agents server. Runs in the interop virtualenv, never imports nb_agents.

Usage: ``python bank_flow.py BASE_URL`` prints one JSON object, one key per scenario;
tests/interop/test_genkit_python_client.py asserts it field by field. A scenario that
raises records ``{"thrown": {...}}`` instead of stopping the others.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from genkit.exp.agent import remote_agent

BASE = sys.argv[1]


def wire(value: Any) -> Any:
    """A pydantic value as Genkit's camelCase JSON."""
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return value


def error_info(exc: BaseException) -> dict[str, Any]:
    status = getattr(exc, "status", None)
    return {
        "name": type(exc).__name__,
        "status": str(status) if status is not None else None,
        "message": str(exc),
    }


async def thrown(fn: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    try:
        return {"returned": wire(await fn())}
    except Exception as exc:
        return {"thrown": error_info(exc)}


def summary(res: Any) -> dict[str, Any]:
    return {
        "finishReason": str(
            res.finish_reason.value if hasattr(res.finish_reason, "value") else res.finish_reason
        ),
        "text": res.text,
        "snapshotId": res.snapshot_id,
        "sessionId": res.session_id,
        "interrupts": [{"name": i.name, "ref": i.ref, "input": i.input} for i in res.interrupts],
    }


def snapshot(snap: Any) -> dict[str, Any] | None:
    if snap is None:
        return None
    data = wire(snap)
    return {
        "snapshotId": data.get("snapshotId"),
        "sessionId": data.get("sessionId"),
        "parentId": data.get("parentId"),
        "status": data.get("status"),
        "finishReason": data.get("finishReason"),
        "roles": [m["role"] for m in (data.get("state") or {}).get("messages", [])],
    }


def status(value: Any) -> str | None:
    return None if value is None else str(getattr(value, "value", value))


def chunk_kind(chunk: Any) -> str:
    raw = chunk.raw
    if raw is not None and raw.model_chunk is not None:
        role = raw.model_chunk.role
        return f"model:{getattr(role, 'value', role) or ''}"
    if raw is not None and raw.turn_end is not None:
        return "turnEnd"
    return "other"


async def respond() -> dict[str, Any]:
    chat = remote_agent(f"{BASE}/bankingAgent", state_management="server").chat()
    first = await chat.send("Please confirm closing the old account.")
    answer = first.interrupts[0].respond({"approved": True, "note": "go ahead"})
    res = await chat.resume(respond=[answer])
    return {
        "first": summary(first),
        "answer": wire(answer),
        "resumed": summary(res),
        "chatSnapshotId": chat.snapshot_id,
        "roles": [str(getattr(m.role, "value", m.role)) for m in chat.messages],
    }


async def restart() -> dict[str, Any]:
    chat = remote_agent(f"{BASE}/bankingAgent", state_management="server").chat()
    first = await chat.send("Transfer $500 to my savings account.")
    answer = first.interrupts[0].restart(resumed_metadata={"approved": True})
    turn = chat.resume_stream(restart=[answer])
    chunks = [
        {"kind": chunk_kind(c), "text": c.text or "", "accumulatedText": c.accumulated_text}
        async for c in turn.stream
    ]
    res = await turn.response
    return {"first": summary(first), "answer": wire(answer), "chunks": chunks, "resumed": summary(res)}


async def snapshots() -> dict[str, Any]:
    bank = remote_agent(f"{BASE}/bankingAgent", state_management="server")
    chat = bank.chat()
    first = await chat.send("Transfer $500 to my savings account.")
    res = await chat.resume(restart=[first.interrupts[0].restart(resumed_metadata={"approved": True})])
    return {
        "resumed": summary(res),
        "bySnapshot": snapshot(await bank.get_snapshot(snapshot_id=res.snapshot_id)),
        "bySession": snapshot(await bank.get_snapshot(session_id=res.session_id)),
        "paused": snapshot(await bank.get_snapshot(snapshot_id=first.snapshot_id)),
        "chatSnapshot": snapshot(await chat.get_snapshot()),
        "missing": snapshot(await bank.get_snapshot(snapshot_id="no-such-snapshot")),
        "abort": status(await bank.abort(res.snapshot_id)),
        "abortAgain": status(await chat.abort()),
        "abortUnknown": status(await bank.abort("no-such-snapshot")),
    }


async def misuse() -> dict[str, Any]:
    # the client itself refuses state for a server-managed agent, so declare it client-managed
    as_client = remote_agent(f"{BASE}/bankingAgent", state_management="client")
    as_server = remote_agent(f"{BASE}/signedBank", state_management="server")
    bank = remote_agent(f"{BASE}/bankingAgent", state_management="server")
    return {
        "stateToServerManaged": await thrown(lambda: as_client.chat().send("hello")),
        "snapshotToClientManaged": await thrown(lambda: as_server.chat(snapshot_id="abc").send("hello")),
        "unknownSnapshot": await thrown(lambda: bank.chat(snapshot_id="no-such-snapshot").send("hello")),
    }


async def client_managed(name: str) -> dict[str, Any]:
    agent = remote_agent(f"{BASE}/{name}", state_management="client")
    chat = agent.chat()
    turns: list[dict[str, Any]] = []
    try:
        first = await chat.send("Transfer $500 to my savings account.")
        turns.append({**summary(first), "state": wire(first.raw.state)})
        second = await chat.resume(restart=[first.interrupts[0].restart(resumed_metadata={"approved": True})])
        turns.append({**summary(second), "state": wire(second.raw.state)})
        third = await chat.send("thanks")
        turns.append({**summary(third), "state": wire(third.raw.state)})
        error = None
    except Exception as exc:
        error = error_info(exc)
    return {
        "turns": turns,
        "error": error,
        "roles": [str(getattr(m.role, "value", m.role)) for m in chat.messages],
    }


async def detach_abort() -> dict[str, Any]:
    blocker = remote_agent(f"{BASE}/blocker", state_management="server")
    task = await blocker.chat().detach("work in the background")
    pending = snapshot(await blocker.get_snapshot(snapshot_id=task.snapshot_id))
    previous = status(await task.abort())
    final = snapshot(await task.wait(interval=0.05))
    return {"snapshotId": task.snapshot_id, "pending": pending, "previous": previous, "final": final}


async def main() -> None:
    results: dict[str, Any] = {}
    scenarios: dict[str, Callable[[], Awaitable[dict[str, Any]]]] = {
        "respond": respond,
        "restart": restart,
        "snapshots": snapshots,
        "misuse": misuse,
        "plain": lambda: client_managed("plainBank"),
        "signed": lambda: client_managed("signedBank"),
        "detachAbort": detach_abort,
    }
    for name, run in scenarios.items():
        try:
            results[name] = await run()
        except Exception as exc:
            results[name] = {"thrown": error_info(exc), "stack": traceback.format_exc()}
    print(json.dumps(results))


if __name__ == "__main__":
    asyncio.run(main())
