"""`GET /api/export` in JSON lines and Parquet holds every stored row exactly once, across pages.

The failure this covers: an export read in many short pages (so that no read outlives the query time
limit) skipping or repeating rows at page boundaries, cutting a Parquet file that no longer opens, or
ignoring `since`. Pages of 7 rows here, so every table spans several pages.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0
from tests.ingest.export.seeded import seed


def _get(base: str, **params: Any) -> httpx.Response:
    r = httpx.get(base + "/api/export", params=params, timeout=60)
    assert r.status_code == 200, r.text
    return r


def _jsonl(base: str, **params: Any) -> list[dict[str, Any]]:
    r = _get(base, format="jsonl", **params)
    lines = r.text.splitlines()
    assert int(r.headers["x-steplens-export-rows"]) == len(lines)
    return [json.loads(line) for line in lines]


def _parquet(base: str, **params: Any) -> list[dict[str, Any]]:
    return pq.read_table(io.BytesIO(_get(base, format="parquet", **params).content)).to_pylist()


@pytest.mark.parametrize("backend", BACKENDS)
def test_export_pages_hold_every_row_once_in_every_format(start_ingest_server: Callable[..., Any], backend: str) -> None:
    srv = start_ingest_server(grpc_port=0, export_page_rows=7, store=backend)
    early = seed(srv.http_url, srv.store, plain_runs=4)
    late = seed(srv.http_url, srv.store, agent="late_agent", plain_runs=3, day=2)
    spans = early.span_ids | late.span_ids
    assert len(spans) > 5 * 7

    for rows in (_jsonl(srv.http_url, table="spans"), _parquet(srv.http_url, table="spans")):
        keys = [(r["trace_id"], r["span_id"]) for r in rows]
        assert len(keys) == len(set(keys)) and set(keys) == spans
    runs = _jsonl(srv.http_url, table="runs")
    assert sorted(r["trace_id"] for r in runs) == sorted(early.trace_ids | late.trace_ids)
    by_trace = {r["trace_id"]: r for r in runs}
    for spec in early.plain + late.plain:
        row = by_trace[spec.trace_id]
        assert (row["agent"], row["steps"], row["input_tokens"]) == (spec.agent, spec.steps, spec.input_tokens)
        assert abs(row["cost_usd"] - spec.cost_usd) < 1e-9
    assert {r["trace_id"] for r in _parquet(srv.http_url, table="runs")} == set(by_trace)

    # JSON columns are objects in JSON lines, JSON text in Parquet
    refund_id = early.content[0].span_ids["refund"]
    line = next(r for r in _jsonl(srv.http_url, table="spans") if r["span_id"] == refund_id)
    assert line["attributes"]["refund.amount"] == 750 and line["attributes"]["refund.tags"] == ["vip", "eu"]
    assert line["start_time"].endswith("Z")
    cell = next(r for r in _parquet(srv.http_url, table="spans") if r["span_id"] == refund_id)
    assert json.loads(cell["attributes"])["refund.ratio"] == 0.25

    scores = _jsonl(srv.http_url, table="scores")
    assert sorted((s["name"], s["trace_id"]) for s in scores) == sorted(
        (s["name"], s["trace_id"]) for s in early.scores + late.scores)
    assert "trace_key" not in scores[0]
    assert {s["name"] for s in _parquet(srv.http_url, table="scores")} == {"helpfulness", "resolved"}

    # since/until bound each table by its own time
    since = (T0 + timedelta(days=1)).isoformat()
    assert {r["trace_id"] for r in _jsonl(srv.http_url, table="runs", since=since)} == late.trace_ids
    assert {(r["trace_id"], r["span_id"]) for r in _parquet(srv.http_url, table="spans", since=since)} == late.span_ids
    assert {r["trace_id"] for r in _jsonl(srv.http_url, table="runs", until=since)} == early.trace_ids
    assert {s["trace_id"] for s in _jsonl(srv.http_url, table="scores", since=since)} == {
        s["trace_id"] for s in late.scores}

    # an empty export is still a valid, empty file
    assert _jsonl(srv.http_url, table="spans", since="2262-01-01T00:00:00Z") == []
    assert _parquet(srv.http_url, table="runs", since="2262-01-01T00:00:00Z") == []


def test_bad_export_parameters_are_4xx_naming_them(start_ingest_server: Callable[..., Any]) -> None:
    srv = start_ingest_server(grpc_port=0)
    for params, status, words in (
        ({"table": "runs", "format": "otlp"}, 422, "spans only"),
        ({"table": "approvals"}, 422, "table"),
        ({"format": "csv"}, 422, "format"),
        ({"since": "yesterday"}, 422, "since"),
        ({"since": "3000-01-01T00:00:00Z"}, 422, "since"),
    ):
        r = httpx.get(srv.http_url + "/api/export", params=params, timeout=30)
        assert r.status_code == status and words in r.text, (params, r.status_code, r.text)
