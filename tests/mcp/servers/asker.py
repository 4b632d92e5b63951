"""An MCP server whose tool asks its questions the 2026-07-28 way (SDK 2 `MCPServer`, stdio).

Run as ``python asker.py LEGS_FILE [KEY]``. ``learn(name)`` adds a tool ``name``
and says the tool list changed (on the stream a 2026-07-28 client listens to). ``plan_trip(city)`` needs three
answers, asked over two rounds: its first result is "input required" with two
questions (``when``, ``who``), its second asks ``budget`` and carries the
first answers in its ``requestState``; the third leg returns the plan. Each
leg appends a line to LEGS_FILE: ``<city> answers=<keys sent> state=<yes|no>``,
so a test sees which legs reached the server.

The state is sealed by the SDK: with KEY, under that key (a server started
again with the same KEY reads the state of the one before); without, under a
key made at start, so a restarted server refuses it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer, RequestStateSecurity
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ToolAnnotations,
)

LEGS = Path(sys.argv[1])
KEY = sys.argv[2] if len(sys.argv) > 2 else None
security = RequestStateSecurity(keys=[KEY]) if KEY else None
server = MCPServer("asker", request_state_security=security)


def _ask(message: str, field: str, kind: str = "string") -> ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": kind, "title": field}}, "required": [field]}
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def _value(answer: object, field: str) -> object:
    if not isinstance(answer, ElicitResult) or answer.action != "accept" or not answer.content:
        return None
    return answer.content.get(field)


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
async def plan_trip(city: str, ctx: Context) -> str | InputRequiredResult:
    """Plan a trip, asking the traveller when, who and how much."""
    responses = ctx.input_responses or {}
    sent = ",".join(sorted(responses)) or "-"
    with LEGS.open("a") as legs:
        legs.write(f"{city} answers={sent} state={'yes' if ctx.request_state else 'no'}\n")
    known = json.loads(ctx.request_state) if ctx.request_state else {}
    for field in ("when", "who"):
        if field in responses:
            known[field] = _value(responses[field], field)
    if "when" not in known or "who" not in known:
        return InputRequiredResult(
            input_requests={
                "when": _ask(f"When do you go to {city}?", "when"),
                "who": _ask(f"Who goes to {city}?", "who"),
            }
        )
    if "budget" not in responses:
        return InputRequiredResult(
            input_requests={"budget": _ask(f"Your budget for {city}?", "budget", "integer")},
            request_state=json.dumps(known),
        )
    budget = _value(responses["budget"], "budget")
    return f"{city}: {known['who']} on {known['when']}, budget {budget}"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
async def learn(name: str, ctx: Context) -> str:
    """Add a tool that says its name."""

    def said() -> str:
        return f"I am {name}"

    server.add_tool(said, name=name, description=f"Say {name}")
    await ctx.notify_tools_changed()
    return f"learned {name}"


if __name__ == "__main__":
    server.run("stdio")
