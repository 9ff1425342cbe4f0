"""Fixtures of the MCP server tests: `steplens mcp` over streamable HTTP on 127.0.0.1 (port picked by
the OS), in front of a real steplens server, spoken to with the MCP SDK's own `Client`."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from mcp import Client

from ingest.mcp_server.api import SteplensApi
from ingest.mcp_server.tools import build_server


class McpHttp:
    """One MCP server process-in-a-thread reading `api_url` with `key`; `url` is its /mcp endpoint."""

    def __init__(self, api_url: str, key: str | None) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        app = build_server(SteplensApi(api_url, key)).streamable_http_app(host="127.0.0.1")
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[sock])), daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            assert time.monotonic() < deadline, "the MCP server did not start within 15 s"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)

    def call(self, tool: str, **arguments: Any) -> Any:
        """Call `tool` with the SDK's client; the result (is_error, structured_content, text)."""
        return asyncio.run(call(self.url, tool, arguments))


async def call(target: Any, tool: str, arguments: dict[str, Any]) -> Any:
    async with Client(target) as client:
        return await client.call_tool(tool, arguments)


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def answer(result: Any) -> dict[str, Any]:
    """The structured answer of a successful call (and it equals the text the model reads)."""
    assert not result.is_error, text_of(result)
    assert json.loads(text_of(result)) == result.structured_content
    return result.structured_content


def wait_indexed(base: str, key: str | None = None, timeout: float = 30.0) -> None:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    deadline = time.monotonic() + timeout
    while True:
        status = httpx.get(base + "/api/search/status", headers=headers, timeout=30).json()
        if status["pending_spans"] == 0 and not status["rebuilding"]:
            return
        assert time.monotonic() < deadline, f"search index still behind after {timeout} s: {status}"
        time.sleep(0.05)


@pytest.fixture
def start_mcp() -> Iterator[Callable[[str, str | None], McpHttp]]:
    started: list[McpHttp] = []

    def start(api_url: str, key: str | None = None) -> McpHttp:
        server = McpHttp(api_url, key)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
