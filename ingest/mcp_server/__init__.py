"""`steplens mcp`: an MCP server (official `mcp` SDK) that lets a coding agent debug agent runs.

Why a client of the HTTP API and not of the database: the server process holds the DuckDB file,
and the API is where the key's project is enforced. The MCP server holds one read key and can show
nothing that key cannot read; every tool is one or a few API calls (ingest/mcp_server/tools.py).

Parts: `api` (the HTTP calls, their failures as tool errors), `paging` (cursors and the output
budget every tool obeys), `transcript` (a trace as a compact step-by-step text), `tools` (the
MCPServer and its tools), `serve` (stdio and streamable HTTP).
"""
