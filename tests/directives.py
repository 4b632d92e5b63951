"""The directive-following model and the tool ledger that the trust and sub-agent apps share.

A user message (or a sub-agent's task) that is JSON ``{"calls": [{"name", "ref",
"input", "metadata"?}]}`` makes the model call those tools, with whatever
metadata the directive puts on them: a prompt-injected model writes what it
likes. The tools write a line to a ledger file before anything else, so the
ledger says exactly what ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nb_agents as nba


def directive(*calls: dict[str, Any]) -> str:
    """The user message (or task) that makes a model call `calls`."""
    return json.dumps({"calls": list(calls)})


def transfer_call(
    ref: str, amount: int = 5, *, to: str = "bob", metadata: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """A ``transfer`` call of a directive."""
    found: dict[str, Any] = {"name": "transfer", "ref": ref, "input": {"amount": amount, "to": to, **extra}}
    if metadata is not None:
        found["metadata"] = metadata
    return found


def directed_calls(text: str) -> dict[str, Any] | None:
    """The model's answer to the directive `text` (its tool calls), or None if `text` is not one."""
    try:
        wanted = json.loads(text)
    except ValueError:
        return None
    content = []
    for c in wanted.get("calls", []):
        part: dict[str, Any] = {"toolRequest": {"name": c["name"], "ref": c["ref"], "input": c["input"]}}
        if c.get("metadata"):
            part["metadata"] = c["metadata"]
        content.append(part)
    return {"message": {"role": "model", "content": content}, "finishReason": "stop"}


def write_ledger(ledger: Path, ctx: nba.ToolContext, inp: dict[str, Any]) -> None:
    """Record that the tool of `ctx` runs on `inp` (before it does anything else)."""
    line = {"tool": ctx.name, "session": ctx.session.session_id, "ref": ctx.ref, "input": inp}
    with open(ledger, "a") as fh:
        fh.write(json.dumps(line) + "\n")


def read_ledger(ledger: Path) -> list[dict[str, Any]]:
    """Every run the ledger recorded, oldest first."""
    if not ledger.exists():
        return []
    return [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]
