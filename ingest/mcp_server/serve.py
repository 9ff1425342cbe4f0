"""Running the MCP server over stdio (a coding agent spawns `steplens mcp`) or streamable HTTP.

Why loopback only over HTTP: the server answers with everything its read key may read and asks its
callers for no credential of their own, so anyone who can reach it reads the project. Bound to
127.0.0.1 it serves the local user only; put a real MCP authorization setup in front to share it.
"""

from __future__ import annotations

import ipaddress
import os
import sys

from rich.markup import escape

from ingest.error_console import error_console
from ingest.mcp_server.api import SteplensApi
from ingest.mcp_server.tools import build_server

EXIT_CONFIG = 2
TRANSPORTS = ("stdio", "http")
DEFAULT_KEY_ENV = "STEPLENS_API_KEY"


class McpConfigError(ValueError):
    """A setting `steplens mcp` cannot run with (reported in one line, exit 2)."""


def check_host(host: str) -> None:
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise McpConfigError(f"--host {host} is not a loopback address: the MCP server hands out what its read key "
                             "may read to anyone who connects, so it listens on 127.0.0.1 (or ::1) only")


def api_from(url: str, key_env: str) -> SteplensApi:
    key = os.environ.get(key_env, "").strip() or None
    return SteplensApi(url=url, key=key)


def serve_http(api: SteplensApi, host: str, port: int) -> None:
    import uvicorn

    check_host(host)
    app = build_server(api).streamable_http_app(host=host)
    print(f"steplens mcp: streamable HTTP on http://{host}:{port}/mcp (reading {api.url})", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def mcp_command(transport: str, api_url: str, key_env: str, host: str, port: int) -> int:
    """`steplens mcp`: run until the client hangs up (stdio) or Ctrl-C (HTTP)."""
    err = error_console()
    try:
        if transport not in TRANSPORTS:
            raise McpConfigError(f"--transport {transport}: use stdio or http")
        api = api_from(api_url, key_env)
        if transport == "stdio":
            build_server(api).run("stdio")
        else:
            serve_http(api, host, port)
    except McpConfigError as exc:
        err.print(f"[bold red]steplens mcp:[/] {escape(str(exc))}", highlight=False)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        pass
    return 0
