"""`steplens report cost` prints the query API's cost attribution: CSV byte-identical to the
server's export, a Markdown table with the same rows, JSON as answered; an unreachable API is a
one-line message and exit code 1, not a traceback."""

from __future__ import annotations

import csv
import io
import socket

import pytest
from typer.testing import CliRunner

from dashboards.report_cost import report_cost
from steplens.cli import app
from tests.ingest.api.analytics_runs import Chat, Run, RunEmitter, Step, Tool
from tests.ingest.api.analytics_server import start_priced_server


@pytest.fixture
def server(start_ingest_server, tmp_path):
    srv = start_priced_server(start_ingest_server, tmp_path)
    emitter = RunEmitter()
    emitter.run(
        Run(steps=[
            Step(chats=[Chat(cost=0.30)], tools=[Tool("search", {"q": 1}, "r", cost=0.05, observation_tokens=200)]),
            Step(chats=[Chat(cost=0.20)], tools=[Tool("fetch", {"u": 2}, "d", observation_tokens=100)]),
            Step(chats=[Chat(cost=0.40)]),
        ])
    )  # fmt: skip
    srv.send(emitter.request())
    return srv


def test_csv_md_and_json(server):
    out = io.StringIO()
    assert report_cost(by="tool", since="2000-01-01T00:00:00Z", fmt="csv", api=server.url, out=out) == 0
    expected = server.get("/api/cost", group_by="tool", since="2000-01-01T00:00:00Z", format="csv").text
    assert out.getvalue() == expected
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [r["key"] for r in rows] == ["search", "fetch"]
    # search: direct 0.05 + decision 0.30 + carry 200 tok x 2 later calls x $0.001 = 0.75
    assert float(rows[0]["cost_usd"]) == pytest.approx(0.75)

    result = CliRunner().invoke(
        app, ["report", "cost", "--by", "tool", "--since", "2000-01-01T00:00:00Z", "--format", "md", "--api", server.url]
    )
    assert result.exit_code == 0, result.output
    table = [line for line in result.output.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| key | runs | llm_calls") and "carry" in table[0]
    assert table[1].startswith("| search | 1 |") and "0.7500" in table[1]
    assert "Total: $" in result.output

    result = CliRunner().invoke(app, ["report", "cost", "--by", "model", "--format", "json", "--api", server.url,
                                      "--since", "2000-01-01T00:00:00Z"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert '"group_by": "model"' in result.output and '"acme-test"' in result.output


def test_unreachable_api_is_one_line_and_exit_1():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    err = io.StringIO()
    assert report_cost(api=f"http://127.0.0.1:{port}", fmt="md", out=io.StringIO(), err=err) == 1
    assert "cannot reach the query API" in err.getvalue() and "steplens serve" in err.getvalue()
    result = CliRunner().invoke(app, ["report", "cost", "--format", "xml"])
    assert result.exit_code != 0
