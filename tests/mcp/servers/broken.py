"""An MCP server that goes wrong on demand, built on the SDK's low-level `Server` (stdio).

Run as ``python broken.py STATE_FILE``. Each ``tools/list`` reads STATE_FILE:
``malformed`` adds a tool ``bad`` whose input schema is not a valid JSON schema
(``"type": 12``); anything else lists only the good tools. Tools:

* ``echo`` (read-only): returns its ``text``;
* ``crash``: reports progress, then the process exits in the middle of the call.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

STATE = Path(sys.argv[1])
server = Server("broken")

READ_ONLY = types.ToolAnnotations(readOnlyHint=True)
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
NOTHING = {"type": "object", "properties": {}}


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    tools = [
        types.Tool(name="echo", description="Say it back", inputSchema=TEXT, annotations=READ_ONLY),
        types.Tool(name="crash", description="Die in the middle of the call", inputSchema=NOTHING),
    ]
    if STATE.exists() and STATE.read_text().strip() == "malformed":
        bad = {"type": "object", "properties": {"x": {"type": 12}}}
        tools.append(types.Tool(name="bad", description="A broken schema", inputSchema=bad))
    return tools


@server.call_tool(validate_input=False)
async def call_tool(name: str, arguments: dict[str, object]) -> list[types.TextContent]:
    if name == "echo":
        return [types.TextContent(type="text", text=f"echo: {arguments.get('text')}")]
    if name == "crash":
        ctx = server.request_context
        token = ctx.meta.progressToken if ctx.meta else None
        if token is not None:
            await ctx.session.send_progress_notification(token, 1, 2, "about to fail")
        await asyncio.sleep(0.2)
        print("broken: exiting in the middle of a call", file=sys.stderr, flush=True)
        os._exit(3)
    raise ValueError(f"no tool {name}")


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
