"""A small MCP server to try nb_agents.mcp with: notes in a folder, built on the SDK's FastMCP.

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
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

__all__ = ["TagChoice", "build", "main"]

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
PRIORITIES = ("low", "normal", "high")


class TagChoice(BaseModel):
    """How to tag a note."""

    # a plain str with an enum in its schema: FastMCP's elicitation takes primitive types only
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


def build(folder: Path) -> FastMCP:
    """The notes server over `folder` (created if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    server = FastMCP("nb-agents-notes", log_level="WARNING")

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
    async def tag_note(name: str, ctx: Context[Any, Any, Any]) -> str:
        """Ask the user how to tag a note, then record it in the note's first line."""
        path = _safe(folder, name)
        answer = await ctx.elicit(f"How should '{name}' be tagged?", schema=TagChoice)
        if answer.action != "accept":
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
    async def index_notes(ctx: Context[Any, Any, Any], delay: float = 0.05) -> str:
        """Count the words of every note, reporting progress as it goes."""
        notes = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
        words = 0
        for i, note in enumerate(notes, start=1):
            words += len(note.read_text(encoding="utf-8").split())
            await ctx.info(f"indexed {note.name}")
            await ctx.report_progress(i, len(notes), f"indexed {note.name}")
            await asyncio.sleep(delay)
        return f"{len(notes)} notes, {words} words"

    return server


def _serve_http(server: FastMCP, port: int, token: str | None) -> None:
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
