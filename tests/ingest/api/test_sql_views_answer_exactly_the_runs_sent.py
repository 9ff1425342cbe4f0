"""`POST /api/sql` over each view answers exactly what was sent (real OTLP, real server), in JSON,
CSV and Arrow IPC alike.

The failure this covers: nothing outside the fixed pages could ask the store a question ("tool
calls that failed per agent", "runs whose cost was over X"), since the server holds the DuckDB file.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any

import httpx
import pyarrow as pa
import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0
from tests.ingest.api.sql_helpers import RUNS, SCORES, post_sql, rows, send_runs, send_scores
from tracer import conventions as c


@pytest.fixture(params=BACKENDS)
def base(request: pytest.FixtureRequest, start_ingest_server: Callable[..., Any]) -> str:
    srv = start_ingest_server(grpc_port=0, store=request.param)
    send_scores(srv.http_url, send_runs(srv.http_url))
    assert srv.store.wait_loaded(30)
    return srv.http_url


def _expected_by_agent() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for i, (agent, steps, failing, ok) in enumerate(RUNS):
        row = out.setdefault(agent, {"runs": 0, "steps": 0, "failed": 0, "cost": 0.0, "tool_errors": 0})
        row["runs"] += 1
        row["steps"] += steps
        row["failed"] += not ok
        row["cost"] += steps * 0.001 * (i + 1)
        row["tool_errors"] += failing
    return out


def test_runs_view_aggregates_equal_the_runs_sent(base: str) -> None:
    got = rows(base, "SELECT agent, count(*) AS runs, sum(steps) AS steps, count_if(NOT ok) AS failed, "
                     "round(sum(cost_usd), 9) AS cost, sum(input_tokens) AS tin FROM runs GROUP BY agent ORDER BY agent")
    expected = _expected_by_agent()
    assert [r[0] for r in got] == sorted(expected)
    for agent, runs, steps, failed, cost, tin in got:
        e = expected[agent]
        assert (runs, steps, failed, tin) == (e["runs"], e["steps"], e["failed"], e["steps"] * 100)
        assert cost == pytest.approx(e["cost"], abs=1e-9)


def test_spans_view_counts_every_span_by_class_and_reads_attributes(base: str) -> None:
    steps = sum(r[1] for r in RUNS)
    got = dict(map(tuple, rows(base, "SELECT operation, count(*) FROM spans GROUP BY operation")))
    assert got == {"agent": len(RUNS), "step": steps, "llm": steps, "tool": steps}
    tool_key = c.GEN_AI_TOOL_NAME
    by_attribute = rows(base, f"""SELECT attributes->>'$."{tool_key}"' AS tool, count(*) FROM spans
                                  WHERE attributes->>'$."{tool_key}"' IS NOT NULL GROUP BY ALL""")
    assert by_attribute == [["lookup", steps]]
    first = rows(base, "SELECT start_time, attributes FROM spans WHERE operation = 'agent' ORDER BY start_time LIMIT 1")
    assert first[0][0] == T0.isoformat().replace("+00:00", "Z")
    assert first[0][1][c.GEN_AI_AGENT_NAME] == "refund"  # JSON columns come back as JSON, not text


def test_tool_calls_view_counts_calls_and_errors_per_agent(base: str) -> None:
    got = rows(base, "SELECT agent, tool_name, count(*), count_if(is_error) FROM tool_calls GROUP BY ALL ORDER BY 1")
    expected = _expected_by_agent()
    assert got == [[a, "lookup", expected[a]["steps"], expected[a]["tool_errors"]] for a in sorted(expected)]


def test_scores_view_holds_each_score_and_joins_its_run(base: str) -> None:
    got = rows(base, "SELECT name, data_type, count(*), avg(value_numeric) FROM scores GROUP BY ALL ORDER BY name")
    helpful = [v for n, v in SCORES if n == "helpfulness"]
    correct = [v for n, v in SCORES if n == "correct"]
    assert got == [["correct", "boolean", len(correct), sum(correct) / len(correct)],
                   ["helpfulness", "numeric", len(helpful), sum(helpful) / len(helpful)]]
    by_agent = rows(base, """SELECT r.agent, count(*) FROM scores s JOIN runs r ON r.trace_id = s.trace_id
                             WHERE s.name = 'correct' AND s.value_label = 'true' GROUP BY ALL ORDER BY 1""")
    agents = [RUNS[i][0] for i, (n, v) in enumerate(SCORES) if n == "correct" and v is True]
    assert by_agent == [[a, agents.count(a)] for a in sorted(set(agents))]


def test_joins_and_ctes_of_the_views(base: str) -> None:
    got = rows(base, """
        WITH failed AS (SELECT trace_id FROM runs WHERE NOT ok)
        SELECT count(*) FROM spans s JOIN failed f ON s.trace_id = f.trace_id WHERE s.status = 'ERROR'""")
    assert got == [[1 + 2]]  # the failed run's root span and its two failed tool calls


def test_csv_and_arrow_answers_hold_the_same_rows_as_json(base: str) -> None:
    sql = "SELECT agent, steps, cost_usd, start_time FROM runs ORDER BY start_time"
    as_json = rows(base, sql)
    r = post_sql(base, sql, format="csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    table = list(csv.reader(io.StringIO(r.text)))
    assert table[0] == ["agent", "steps", "cost_usd", "start_time"]
    assert [[a, int(s), float(cost)] for a, s, cost, _ in table[1:]] == [[a, s, cost] for a, s, cost, _ in as_json]
    arrow = httpx.post(f"{base}/api/sql", json={"sql": sql},
                       headers={"accept": "application/vnd.apache.arrow.stream"}, timeout=30)
    assert arrow.status_code == 200 and arrow.headers["content-type"] == "application/vnd.apache.arrow.stream"
    got = pa.ipc.open_stream(arrow.content).read_all()
    assert got.column_names == ["agent", "steps", "cost_usd", "start_time"]
    assert got.column("agent").to_pylist() == [r[0] for r in as_json]
    assert got.column("steps").to_pylist() == [r[1] for r in as_json]
    assert pa.types.is_timestamp(got.schema.field("start_time").type)


def test_an_empty_answer_still_names_its_columns(base: str) -> None:
    r = post_sql(base, "SELECT agent, steps FROM runs WHERE steps > 1000")
    assert r.status_code == 200
    assert r.json() == {"columns": [{"name": "agent", "type": "VARCHAR"}, {"name": "steps", "type": "INTEGER"}],
                        "rows": [], "row_count": 0, "truncated": False, "truncated_by": None, "error": None}
    assert post_sql(base, "SELECT agent, steps FROM runs WHERE steps > 1000", format="csv").text.strip() == \
        '"agent","steps"'


def test_catalog_lists_the_views_columns_and_every_example_runs(base: str) -> None:
    catalog = httpx.get(f"{base}/api/sql/views", timeout=30).json()
    views = {v["name"]: {c["name"]: c["type"] for c in v["columns"]} for v in catalog["views"]}
    assert set(views) == {"runs", "spans", "tool_calls", "scores"}
    assert views["runs"]["cost_usd"] == "DOUBLE" and views["spans"]["attributes"] == "JSON"
    assert views["tool_calls"]["is_error"] == "BOOLEAN"
    assert "quantile_cont" in catalog["functions"] and "read_csv" not in catalog["functions"]
    assert catalog["limits"]["max_rows"] == 100_000
    assert len(catalog["examples"]) >= 3
    for example in catalog["examples"]:
        assert rows(base, example["sql"]), example["title"]  # every example answers rows on real runs
