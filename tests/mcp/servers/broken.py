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
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

STATE = Path(sys.argv[1])

READ_ONLY = types.ToolAnnotations(read_only_hint=True)
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
NOTHING = {"type": "object", "properties": {}}


async def list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    tools = [
        types.Tool(name="echo", description="Say it back", input_schema=TEXT, annotations=READ_ONLY),
        types.Tool(name="crash", description="Die in the middle of the call", input_schema=NOTHING),
    ]
    if STATE.exists() and STATE.read_text().strip() == "malformed":
        bad = {"type": "object", "properties": {"x": {"type": 12}}}
        tools.append(types.Tool(name="bad", description="A broken schema", input_schema=bad))
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "echo":
        text = f"echo: {arguments.get('text')}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    if params.name == "crash":
        await ctx.session.report_progress(1, 2, "about to fail")
        await asyncio.sleep(0.2)
        print("broken: exiting in the middle of a call", file=sys.stderr, flush=True)
        os._exit(3)
    raise ValueError(f"no tool {params.name}")


server = Server("broken", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
