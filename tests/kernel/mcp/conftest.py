"""Fixtures of the MCP tests: the real test server (mcp_test_server.py) as a process, over stdio
(the kernel spawns it) or streamable HTTP (started here on 127.0.0.1, port picked by the OS)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kernel.mcp import MCPToolSource
from tests.tracer.conftest import memory_handle  # noqa: F401 - fixture

SERVER = Path(__file__).with_name("mcp_test_server.py")


@pytest.fixture
def http_server() -> Iterator[tuple[str, subprocess.Popen]]:
    """(url, process) of a streamable-HTTP MCP server; the process is stopped after the test."""
    proc = subprocess.Popen([sys.executable, str(SERVER), "http"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("PORT "), f"the MCP test server did not start: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp", proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(params=["stdio", "streamable_http"])
def make_source(request: pytest.FixtureRequest) -> Callable[..., MCPToolSource]:
    """A factory of MCPToolSource for the test server, once per transport."""
    if request.param == "stdio":
        return lambda **kw: MCPToolSource.stdio(sys.executable, [str(SERVER), "stdio"], **kw)
    url, _ = request.getfixturevalue("http_server")
    return lambda **kw: MCPToolSource.http(url, **kw)
