"""The demo's MCP tool source: the infrastructure-repository server (kernel.examples.demo_mcp_server)
started as a real subprocess over stdio, its tools loaded with `kernel.mcp.MCPToolSource`.

The ops agent's `read_repo_file` is then the server's tool (same name, description and answers
as the local one), so every ops run of the demo makes MCP tool calls whose `execute_tool` spans
name the server (`steplens.tool.mcp.server` = `infra-repo`, transport stdio). One server serves
every run of a workload: it is opened in the workload's event loop and closed with it.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from kernel.mcp import MCPToolSource
from kernel.tools import Tool

SERVER_MODULE = "kernel.examples.demo_mcp_server"
SERVER_NAME = "infra-repo"  # what the server reports and the tool spans record
# The checkout this module is in: the server process imports the same code (not an installed copy).
_ROOT = Path(__file__).resolve().parents[2]
CONNECT_TIMEOUT_S = 30.0  # generous: a loaded machine starts a Python process slowly


@asynccontextmanager
async def repo_tools() -> AsyncIterator[list[Tool]]:
    """The server's tools for the duration of the block (the server process stops after it)."""
    source = MCPToolSource.stdio(sys.executable, ["-m", SERVER_MODULE], cwd=_ROOT, env={"PYTHONPATH": str(_ROOT)},
                                 name=SERVER_NAME, connect_timeout_s=CONNECT_TIMEOUT_S)
    async with source:
        yield list(source.tools)
