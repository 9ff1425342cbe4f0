"""`steplens sql "SELECT ..."` runs the query through a real server's API and prints it: a table with
the answer's rows, CSV and JSON exactly as the server streamed them; a refused query is exit 1 with
the server's reason, an unreachable server exit 2, never a traceback.

The failure this covers: the server locks the DuckDB file, so there was no way to ask it a question
from a terminal.
"""

from __future__ import annotations

import csv
import io
import json
import socket
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from steplens.cli import app
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.sql_helpers import RUNS, post_sql, send_runs

QUERY = "SELECT agent, count(*) AS runs, sum(steps) AS steps FROM runs GROUP BY agent ORDER BY agent"


@pytest.fixture
def api(start_ingest_server: Callable[..., Any]) -> str:
    srv = start_ingest_server(grpc_port=0)
    send_runs(srv.http_url)
    assert srv.store.wait_loaded(30)
    return srv.http_url


def _expected() -> list[list[Any]]:
    by_agent: dict[str, list[int]] = {}
    for agent, steps, _, _ in RUNS:
        row = by_agent.setdefault(agent, [0, 0])
        row[0] += 1
        row[1] += steps
    return [[agent, *counts] for agent, counts in sorted(by_agent.items())]


@pytest.mark.parametrize("backend", BACKENDS)
def test_table_csv_and_json(api: str) -> None:
    result = CliRunner().invoke(app, ["sql", QUERY, "--api", api])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any("agent" in line and "runs" in line and "steps" in line for line in lines)
    for agent, runs, steps in _expected():
        assert any(agent in line and f" {runs} " in line and f" {steps} " in line for line in lines), result.output
    assert "2 row(s)" in result.output

    result = CliRunner().invoke(app, ["sql", QUERY, "--format", "csv", "--api", api])
    assert result.exit_code == 0, result.output
    assert result.stdout == post_sql(api, QUERY, format="csv").text
    parsed = list(csv.reader(io.StringIO(result.stdout)))
    assert parsed[0] == ["agent", "runs", "steps"]
    assert [[a, int(r), int(s)] for a, r, s in parsed[1:]] == _expected()

    result = CliRunner().invoke(app, ["sql", QUERY, "--format", "json", "--api", api])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rows"] == _expected()


@pytest.mark.parametrize("backend", BACKENDS)
def test_limit_cut_is_noted_refusal_is_exit_1(api: str) -> None:
    result = CliRunner().invoke(app, ["sql", "SELECT span_id FROM spans", "--limit", "2", "--api", api])
    assert result.exit_code == 0, result.output
    assert "2 row(s), cut by the server's row limit" in result.output
    result = CliRunner().invoke(app, ["sql", "SELECT * FROM read_csv('/etc/passwd')", "--api", api])
    assert result.exit_code == 1
    assert "table functions are not allowed" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(app, ["sql", "SELECT 1", "--format", "xml", "--api", api])
    assert result.exit_code != 0


def test_unreachable_server_is_exit_2() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = CliRunner().invoke(app, ["sql", "SELECT 1", "--api", f"http://127.0.0.1:{port}"])
    assert result.exit_code == 2
    assert "cannot reach" in result.output and "Traceback" not in result.output
