"""The demo's MCP server: the ops agent's infrastructure repository, served over stdio with the
official `mcp` SDK (`python -m kernel.examples.demo_mcp_server`, started by `kernel.examples.demo_mcp`).

Why a real server: in the demo the ops agent reads the repository through MCP, as a team would
through a Git or GitHub MCP server, so its `read_repo_file` calls are MCP tool calls end to end
(a subprocess, JSON-RPC over stdin/stdout, the tool span naming the server). The files and the
not-found answer are the local tool's (`kernel.examples.ops`), so a run reads the same whichever
way the tool is served.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from kernel.examples.data import NotFound
from kernel.examples.demo_mcp import SERVER_NAME
from kernel.examples.ops import READ_REPO_FILE_DESCRIPTION, read_file

server = MCPServer(SERVER_NAME, version="1.0", log_level="WARNING")


@server.tool(description=READ_REPO_FILE_DESCRIPTION, structured_output=False,
             annotations=ToolAnnotations(read_only_hint=True))
def read_repo_file(path: str) -> str:
    try:
        return read_file(path)
    except NotFound as exc:
        # The model reads "NotFound: {...}" as from the local tool (kernel.examples.data.NotFound).
        raise ToolError(f"NotFound: {exc}") from None


if __name__ == "__main__":
    server.run("stdio")
