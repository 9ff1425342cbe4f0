"""`steplens mcp` as a coding agent starts it: a subprocess spoken to over stdio by the SDK's client,
reading a real server with the key from the environment variable `--api-key-env` names.

The failure this covers: the console script's wiring (options, key variable, transport) broken while
the in-process tests still pass; and an HTTP listener beyond loopback handing a project's data to
anyone on the network.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from ingest.config import ApiKey
from tests.ingest.export.seeded import seed
from tests.ingest.mcp_server.conftest import answer, text_of

ROOT = Path(__file__).resolve().parents[3]
KEY = "read-a-secret-0123456789"
INGEST = "ingest-a-secret-0123456789"


def _params(api: str, *extra: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    base = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), **(env or {})}
    return StdioServerParameters(command=sys.executable, args=["-m", "steplens.cli", "mcp", "--api", api, *extra],
                                 env=base, cwd=str(ROOT))


async def _calls(params: StdioServerParameters, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    async with Client(params) as client:
        return [await client.call_tool(tool, arguments) for tool, arguments in calls]


def test_steplens_mcp_command_over_stdio(start_ingest_server: Callable[..., Any]) -> None:
    srv = start_ingest_server(grpc_port=0, api_keys=[ApiKey(key=KEY, project="A", scopes=["read"]),
                                                     ApiKey(key=INGEST, project="A", scopes=["ingest"])])
    sent = seed(srv.http_url, srv.store, key=INGEST, score_key=None, plain_runs=1)

    runs, trace = asyncio.run(_calls(
        _params(srv.http_url, "--api-key-env", "MY_STEPLENS_KEY", env={"MY_STEPLENS_KEY": KEY}),
        ("list_runs", {}), ("get_trace", {"trace_id": sent.content[0].trace_id})))
    assert {r["trace_id"] for r in answer(runs)["runs"]} == sent.trace_ids
    assert "tool refund(" in answer(trace)["transcript"]

    (refused,) = asyncio.run(_calls(_params(srv.http_url, env={"STEPLENS_API_KEY": "wrong-0123456789"}),
                                    ("list_runs", {})))
    assert refused.is_error and "refused the API key (401" in text_of(refused)


def test_http_transport_refuses_to_listen_beyond_loopback() -> None:
    done = subprocess.run([sys.executable, "-m", "steplens.cli", "mcp", "--transport", "http", "--host", "0.0.0.0"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2
    assert "not a loopback address" in done.stderr
