"""Hostile SQL sent to `POST /api/sql` with a project-A key: each is refused with a 400 naming what
was refused, or bounded by the limits (a 504 from the time limit, an answer cut at the row limit),
or, when it is a legitimate read, answered with project A's rows only. Never a 5xx, never a byte of
project B, never a write: afterwards every span is still there and no file was written.

The failure this covers: a SQL endpoint is a door to the whole DuckDB file (other projects' rows,
the server's tables, files, settings, extensions) unless every statement is parsed and checked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ingest.config import ApiKey
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.sql_helpers import RUNS, post_sql, rows, send_runs

KEY_A, KEY_B = "sql-read-a-0123456789", "sql-ingest-b-0123456789"
INGEST_A = "sql-ingest-a-0123456789"
B_PREFIX = "secret_of_b_"  # every agent name of project B starts with it

REFUSED, BOUNDED, A_ONLY = {400}, {200, 400, 504}, {200}


def hostile(out: Path) -> list[tuple[str, set[int], str]]:
    """(statement, allowed statuses, a word the refusal must contain)."""
    f = str(out)
    return [
        ("SELECT * FROM read_csv('/etc/passwd')", REFUSED, "table function"),
        ("SELECT * FROM '/etc/passwd'", REFUSED, "unknown table"),
        ("SELECT * FROM read_parquet('x.parquet')", REFUSED, "table function"),
        ("SELECT * FROM glob('/*')", REFUSED, "table function"),
        ("SELECT * FROM 'http://127.0.0.1:9/x.csv'", REFUSED, "unknown table"),
        (f"ATTACH '{f}.duckdb' AS x", REFUSED, "ATTACH"),
        ("DETACH steplens", REFUSED, "DETACH"),
        (f"COPY runs TO '{f}'", REFUSED, "COPY"),
        (f"COPY (SELECT * FROM runs) TO '{f}'", REFUSED, "COPY"),
        ("PRAGMA database_list", REFUSED, "PRAGMA"),
        ("INSTALL httpfs", REFUSED, "INSTALL"),
        ("LOAD httpfs", REFUSED, "LOAD"),
        ("SET threads = 1", REFUSED, "SET"),
        ("SELECT 1; DROP TABLE spans", REFUSED, "one statement"),
        ("SELECT * FROM runs; SELECT * FROM spans", REFUSED, "one statement"),
        ("SELECT * FROM runs WHERE agent = '' OR ''=''; DELETE FROM runs; --'", REFUSED, "one statement"),
        ("DELETE FROM spans", REFUSED, "DELETE"),
        ("UPDATE runs SET agent = 'x'", REFUSED, "UPDATE"),
        ("INSERT INTO runs SELECT * FROM runs", REFUSED, "INSERT"),
        ("CREATE TABLE x AS SELECT * FROM runs", REFUSED, "CREATE"),
        ("SELECT * INTO stolen FROM runs", REFUSED, "INTO"),
        ("CALL pragma_version()", REFUSED, "CALL"),
        ("EXPLAIN ANALYZE SELECT * FROM runs", REFUSED, "EXPLAIN"),
        ("CHECKPOINT", REFUSED, "SELECT"),
        ("SELECT getenv('HOME')", REFUSED, "getenv"),
        ("SELECT current_setting('threads')", REFUSED, "current_setting"),
        ("SELECT * FROM query('SELECT * FROM main.runs')", REFUSED, "table function"),
        ("SELECT list_aggregate([1], 'string_agg', ',')", REFUSED, "list_aggregate"),
        ("SELECT * FROM information_schema.tables", REFUSED, "qualified"),
        ("SELECT * FROM duckdb_tables()", REFUSED, "table function"),
        ("SELECT * FROM sqlite_master", REFUSED, "unknown table"),
        ("SELECT * FROM pg_catalog.pg_tables", REFUSED, "qualified"),
        ("SELECT * FROM main.spans", REFUSED, "qualified"),
        ("SELECT * FROM steplens.main.runs", REFUSED, "qualified"),
        ("SELECT * FROM alert_state", REFUSED, "unknown table"),
        ("SELECT * FROM runs r WHERE EXISTS (SELECT 1 FROM approvals)", REFUSED, "unknown table"),
        ("SELECT * FROM runs, LATERAL (SELECT * FROM log_records) l", REFUSED, "unknown table"),
        ("WITH spans AS (SELECT * FROM alert_events) SELECT * FROM spans", REFUSED, "unknown table"),
        ("SELECT * FROM runs WHERE trace_id IN (SELECT trace_id FROM main.runs)", REFUSED, "qualified"),
        ("SELECT * FROM (WITH t AS (SELECT 1) SELECT * FROM t) s, t", REFUSED, "unknown table"),
        ("SELECT * FROM __sl_view_runs", REFUSED, "reserved"),
        ("SELECT ? FROM runs", REFUSED, "parameters"),
        ("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t", REFUSED,
         "RECURSIVE"),
        ("SELECT repeat('x', 2000000000)", REFUSED, "repeat"),
        ("SELECT lpad('x', 2000000000, 'y')", REFUSED, "lpad"),
        ("SELECT range(100000000000)", REFUSED, "range"),
        ("SELECT '" + "x" * 70_000 + "'", REFUSED, "limit"),
        ("SELECT " + "9" * 5000, BOUNDED, ""),
        ("SELECT count(*) FROM spans a, spans b, spans c, spans d, spans e, spans f, spans g", BOUNDED, ""),
        ("SELECT string_agg(a.attributes::VARCHAR, '') FROM spans a, spans b, spans c, spans d", BOUNDED, ""),
        ("SELECT a.* FROM spans a, spans b, spans c", BOUNDED, ""),
        ("SELECT CAST(agent AS INTEGER) FROM runs", BOUNDED, ""),
        ("SELECT * FROM runs WHERE project = 'B' OR 1 = 1", A_ONLY, ""),
        ("SELECT * FROM runs AS alert_state, (SELECT * FROM spans) AS approvals", A_ONLY, ""),
        ("WITH runs AS (SELECT * FROM runs) SELECT * FROM runs", A_ONLY, ""),
        ("/* ATTACH */ SELECT agent FROM runs -- */ ; ATTACH 'x' AS y", A_ONLY, ""),
        ("SELECT 'B' AS project, * FROM spans WHERE project <> 'A'", A_ONLY, ""),
    ]


@pytest.fixture(params=BACKENDS)
def base(request: pytest.FixtureRequest, start_ingest_server: Callable[..., Any]) -> str:
    keys = [ApiKey(key=KEY_A, project="A", scopes=["read"]), ApiKey(key=INGEST_A, project="A", scopes=["ingest"]),
            ApiKey(key=KEY_B, project="B", scopes=["ingest"])]
    srv = start_ingest_server(grpc_port=0, store=request.param, api_keys=keys, sql_timeout_s=1.0, sql_max_rows=50)
    send_runs(srv.http_url, INGEST_A, agent_prefix="a_")
    send_runs(srv.http_url, KEY_B, agent_prefix=B_PREFIX)
    assert srv.store.wait_loaded(30)
    return srv.http_url


def test_hostile_statements_are_refused_or_bounded_and_never_reach_project_b(base: str, tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    cases = hostile(out)
    assert len(cases) >= 30
    for sql, allowed, word in cases:
        r = post_sql(base, sql, KEY_A, timeout=60)
        shown = sql[:80]
        assert r.status_code in allowed, f"{shown}: {r.status_code} {r.text[:300]}"
        assert B_PREFIX not in r.text and '"B"' not in r.text, f"{shown} leaked B: {r.text[:300]}"
        if r.status_code == 400:
            assert word.lower() in r.json()["detail"].lower(), f"{shown}: {r.json()['detail']}"
        if r.status_code == 504:
            assert "time limit of 1 s" in r.json()["detail"]
        if r.status_code == 200 and allowed == A_ONLY:
            answer = r.json()
            names = [c["name"] for c in answer["columns"]]
            for row in answer["rows"]:
                record = dict(zip(names, row, strict=False))
                assert record.get("agent") is None or record["agent"].startswith("a_"), (shown, record)
    assert not out.exists() and not Path(f"{out}.duckdb").exists()
    # nothing was written or dropped: every run and span of A is still there, and the server answers
    steps = sum(r[1] for r in RUNS)
    assert rows(base, "SELECT count(*) FROM runs", KEY_A) == [[len(RUNS)]]
    assert rows(base, "SELECT count(*) FROM spans", KEY_A) == [[len(RUNS) + 3 * steps]]


def test_a_huge_body_is_413_without_being_read_whole(base: str) -> None:
    import httpx

    r = httpx.post(f"{base}/api/sql", content=b'{"sql": "' + b"x" * (2 * 1024 * 1024) + b'"}',
                   headers={"x-api-key": KEY_A, "content-type": "application/json"}, timeout=30)
    assert r.status_code == 413 and "limit" in r.json()["detail"]
    bad = httpx.post(f"{base}/api/sql", content=b"not json", headers={"x-api-key": KEY_A}, timeout=30)
    assert bad.status_code == 422
    unknown = post_sql(base, "SELECT 1", KEY_A, formats="csv")
    assert unknown.status_code == 422 and "formats" in unknown.text
