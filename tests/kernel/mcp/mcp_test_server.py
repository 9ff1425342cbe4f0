"""A real MCP server for the kernel's MCP tests, run as its own process by the tests.

`python mcp_test_server.py stdio` serves over stdin/stdout; `python mcp_test_server.py http`
serves streamable HTTP on 127.0.0.1 at a port the OS picks and prints `PORT <n>` on stdout
once it listens. Its tools cover what the kernel must survive: a normal read-only tool, a tool
with side effects, one that reports an error result, one that never answers, and one that
kills its own server mid-call.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

server = MCPServer("calc", version="1.0", log_level="WARNING")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: Annotated[int, Field(description="the second addend")]) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def whoami() -> dict:
    """The server's process id (lets a test kill this server)."""
    return {"pid": os.getpid()}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def traceparent(ctx: Context) -> str:
    """The W3C traceparent the client sent in the request's _meta (empty when none)."""
    meta = ctx.request_context.meta
    value = meta.get("traceparent") if isinstance(meta, dict) else getattr(meta, "traceparent", None)
    return str(value or "")


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
def write_note(text: str) -> str:
    """Store a note (a side effect)."""
    return f"stored {len(text)} characters"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    if b == 0:
        raise ToolError("division by zero")
    return a / b


@server.tool(name="notes.count", annotations=ToolAnnotations(read_only_hint=True))
def notes_count() -> int:
    """A tool whose MCP name (with a dot) no LLM provider accepts as a function name."""
    return 7


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def hang() -> str:
    """Never answers."""
    await asyncio.sleep(3600)
    return "unreachable"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def crash() -> str:
    """Kills this server while the call is in flight."""
    os._exit(3)


async def _serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    await uv.serve(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        asyncio.run(_serve_http())
    else:
        server.run("stdio")
