"""A small MCP server to try nb_agents.mcp with: notes in a folder, built on the SDK's `MCPServer`.

Run it over stdio (what `MCPServer.stdio` starts)::

    python -m nb_agents.mcp.demo --dir notes

or over streamable HTTP on 127.0.0.1, requiring a bearer token::

    python -m nb_agents.mcp.demo --dir notes --port 9000 --token s3cret
    # MCPServer.http("http://127.0.0.1:9000/mcp", headers={"Authorization": "Bearer s3cret"}, name="notes")

Its tools show each thing nb_agents does with MCP: ``list_notes`` and
``read_note`` are marked read-only (they run without a form), ``write_note``
and ``delete_note`` destructive (held for approval), ``tag_note`` asks the user
for input in the middle of the call (an elicitation: a form in the notebook),
and ``index_notes`` reports progress and sends log messages.

``tag_note`` asks through a resolver, so one tool body serves both protocol
eras: a 2026-07-28 client gets the question back as the call's result ("input
required", with sealed state it sends back with the answer), a 2025-era client
gets it as a request in the middle of the call. The state is sealed with a key
kept in the notes folder (``.request-state-key``), so a question asked before
the server restarted (with the kernel that started it) can still be answered.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import warnings
from pathlib import Path
from typing import Annotated, Any

from mcp import MCPDeprecationWarning
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    RequestStateSecurity,
    Resolve,
)
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

__all__ = ["TagChoice", "build", "main"]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
PRIORITIES = ("low", "normal", "high")
KEY_FILE = ".request-state-key"


class TagChoice(BaseModel):
    """How to tag a note."""

    # a plain str with an enum in its schema: elicitation schemas take primitive types only
    priority: str = Field(
        "normal", description="How urgent the note is", json_schema_extra={"enum": list(PRIORITIES)}
    )
    tags: str = Field("", description="Tags, separated by commas")
    pinned: bool = Field(False, description="Keep the note on top")


def _safe(folder: Path, name: str) -> Path:
    path = (folder / name).resolve()
    if path.parent != folder.resolve() or not name or name.startswith("."):
        raise ValueError(f"not a note name: {name!r} (plain file names only)")
    return path


def _state_key(folder: Path) -> str:
    """The key that seals the state of a question (created once, readable by its owner only)."""
    path = folder / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="ascii").strip()
    key = secrets.token_hex(32)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(key)
    return key


async def _ask_tag(name: str) -> Elicit[TagChoice]:
    # built from the tool's arguments only: the answer is matched to the question on the retry
    return Elicit(f"How should '{name}' be tagged?", TagChoice)


def build(folder: Path) -> MCPServer:
    """The notes server over `folder` (created if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    security = RequestStateSecurity(keys=[_state_key(folder)])
    server = MCPServer("nb-agents-notes", log_level="WARNING", request_state_security=security)

    @server.tool(annotations=READ_ONLY)
    def list_notes() -> list[str]:
        """The names of all notes."""
        return sorted(p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))

    @server.tool(annotations=READ_ONLY)
    def read_note(name: str) -> str:
        """The text of one note."""
        return _safe(folder, name).read_text(encoding="utf-8")

    @server.tool(annotations=DESTRUCTIVE)
    def write_note(name: str, text: str) -> str:
        """Create or overwrite a note."""
        _safe(folder, name).write_text(text, encoding="utf-8")
        return f"saved {name} ({len(text)} characters)"

    @server.tool(annotations=DESTRUCTIVE)
    def delete_note(name: str) -> str:
        """Delete a note."""
        _safe(folder, name).unlink()
        return f"deleted {name}"

    @server.tool(annotations=WRITES)
    async def tag_note(name: str, answer: Annotated[ElicitationResult[TagChoice], Resolve(_ask_tag)]) -> str:
        """Ask the user how to tag a note, then record it in the note's first line."""
        path = _safe(folder, name)
        if not isinstance(answer, AcceptedElicitation):
            return f"the user chose to {answer.action}: {name} is not tagged"
        choice = answer.data
        if choice.priority not in PRIORITIES:
            allowed = ", ".join(PRIORITIES)
            return f"'{choice.priority}' is not a priority (one of {allowed}): {name} is not tagged"
        line = f"[{choice.priority}{' pinned' if choice.pinned else ''}] tags: {choice.tags or '-'}"
        body = path.read_text(encoding="utf-8") if path.exists() else ""
        path.write_text(f"{line}\n{body}", encoding="utf-8")
        return f"tagged {name}: {line}"

    @server.tool(annotations=READ_ONLY)
    async def index_notes(ctx: Context[Any, Any], delay: float = 0.05) -> str:
        """Count the words of every note, reporting progress as it goes."""
        notes = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
        words = 0
        for i, note in enumerate(notes, start=1):
            words += len(note.read_text(encoding="utf-8").split())
            with warnings.catch_warnings():  # MCP logging is deprecated (SEP-2577), and still shown here
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await ctx.info(f"indexed {note.name}")
            await ctx.report_progress(i, len(notes), f"indexed {note.name}")
            await asyncio.sleep(delay)
        return f"{len(notes)} notes, {words} words"

    return server


def _serve_http(server: MCPServer, port: int, token: str | None) -> None:
    import uvicorn

    app = server.streamable_http_app()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and token is not None:
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await app(scope, receive, send)

    # loopback only: this is a demo, not a service
    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


def main(argv: list[str] | None = None) -> None:
    """Serve the notes over stdio, or over HTTP with ``--port``."""
    parser = argparse.ArgumentParser(prog="python -m nb_agents.mcp.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="notes", help="the notes folder (default: ./notes)")
    parser.add_argument("--port", type=int, help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio")
    parser.add_argument("--token", help="with --port: require 'Authorization: Bearer TOKEN'")
    args = parser.parse_args(argv)
    server = build(Path(args.dir))
    if args.port is None:
        server.run("stdio")
    else:
        _serve_http(server, args.port, args.token)


if __name__ == "__main__":
    main()
