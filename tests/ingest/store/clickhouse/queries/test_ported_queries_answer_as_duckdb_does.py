"""Each ported ClickHouse read query returns the same answer as its DuckDB module over the same
spans: runs of two agents and two models, failures, tool errors, a late root and a retried batch,
loaded through each store's own receive path (OTLP requests -> spool -> writer)."""

from __future__ import annotations

import math
from dataclasses import asdict, is_dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from ingest.queries.filters import CommonFilters
from ingest.queries.runs import RunFilters, RunKey
from ingest.store.backend import CLICKHOUSE_QUERIES, DUCKDB_QUERIES
from tests.ingest.store.otlp_build import T0, agent_run, request

SINCE = T0 - timedelta(hours=1)
FILTERS = {
    "all": CommonFilters(modes=None),
    "live since": CommonFilters(since=SINCE, until=T0 + timedelta(days=1)),
    "agent": CommonFilters(agent="billing_agent"),
    "project": CommonFilters(projects=frozenset({"p"})),
    "no project": CommonFilters(projects=frozenset()),
}


def _plain(value: Any) -> Any:
    """Comparable form: dataclasses as dicts, floats rounded (sums may differ in the last bits)."""
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 9)
    return value


@pytest.fixture
async def stores(open_ch_store, open_store, tmp_path):
    ch = open_ch_store(db=tmp_path / "ch" / "steplens.duckdb")  # its own spool beside the DuckDB store's
    duck = open_store()
    requests = []
    for i in range(6):
        root, children = agent_run(
            start=T0 + timedelta(minutes=7 * i), agent="billing_agent" if i % 2 else "support_agent",
            steps=1 + i % 3, tool_error_steps=i % 2, model="gpt-4o" if i % 3 == 0 else "gpt-4o-mini", ok=i != 4,
        )
        if i == 5:  # the root arrives late, after its children; the children batch is retried
            requests += [("p", request(children)), ("p", request(children)), ("p", request([root]))]
        else:
            requests.append(("p" if i < 4 else "q", request([root, *children])))
    for store in (ch, duck):
        for project, req in requests:
            await store.submit(project, req)
            assert store.wait_loaded(30)
    return duck, ch


def _both(stores, call) -> tuple[Any, Any]:
    duck, ch = stores
    with duck.read() as cur:
        want = _plain(call(DUCKDB_QUERIES, cur))
    with ch.read() as cur:
        got = _plain(call(CLICKHOUSE_QUERIES, cur))
    return want, got


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_overview_failures_cost_tools_models_equal(stores, name: str) -> None:
    f = FILTERS[name]
    origin, bucket_us = SINCE, 600_000_000
    calls = {
        "overview": lambda q, cur: q.overview.overview(cur, f, origin, bucket_us),
        "first_run_start": lambda q, cur: q.overview.first_run_start(cur, f),
        "failures": lambda q, cur: q.failures.failure_clusters(cur, f, origin, bucket_us, 10),
        "first_failure_start": lambda q, cur: q.failures.first_failure_start(cur, f),
        "tools": lambda q, cur: _tools_without_examples(q.tools.tool_rows(cur, f)),
        "models": lambda q, cur: q.models.model_rows(cur, f),
        "score_aggregates": lambda q, cur: q.scores.score_aggregates(cur, f),
        **{f"cost by {g}": lambda q, cur, g=g: _examples_as_sets(q.cost.cost_rows(cur, f, g))
           for g in ("agent", "version", "project", "user", "conversation", "day", "model", "provider")},
    }
    for what, call in calls.items():
        want, got = _both(stores, call)
        assert got == want, (what, _first_difference(got, want))
    if name == "all":  # the comparison is not vacuous
        want, _ = _both(stores, calls["overview"])
        assert want["totals"]["runs"] == 6 and want["totals"]["failed_runs"] == 1


def _first_difference(got: Any, want: Any, path: str = "") -> str:
    """Where two answers first differ (pytest truncates nested diffs)."""
    if isinstance(got, dict) and isinstance(want, dict):
        for k in sorted(set(got) | set(want), key=str):
            if got.get(k) != want.get(k):
                return _first_difference(got.get(k), want.get(k), f"{path}.{k}")
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            if g != w:
                return _first_difference(g, w, f"{path}[{i}]")
    return f"{path}: clickhouse {got!r} != duckdb {want!r}"


def _examples_as_sets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs of equal cost tie in DuckDB's max_by in no defined order; with fewer runs than
    EXAMPLE_CANDIDATES every run of the group is a candidate on both stores."""
    for r in rows:
        r["example_candidates"] = sorted(r["example_candidates"])
    return rows


def _tools_without_examples(rows: Any) -> Any:
    """DuckDB keeps one example per hourly rollup cell, ClickHouse one per trace: the best candidate
    (the latest failing call's trace, else the latest call's) must agree; everything else equal."""
    for s in rows.stats:
        s["example_candidates"] = s["example_candidates"][:1]
    return rows


@pytest.mark.parametrize("sort", ["start_time", "duration_ms", "cost_usd", "steps", "input_tokens"])
def test_runs_pages_and_trace_fetch_equal(stores, sort: str) -> None:
    def pages(q, cur) -> list[Any]:
        out, after = [], None
        while True:
            page = q.runs.list_runs(cur, RunFilters(modes=None), sort=sort, order="asc", limit=2, after=after)
            out.append(page)
            if page.next_key is None:
                return out
            after = RunKey(page.next_key.value, page.next_key.trace_id, page.next_key.project)

    want, got = _both(stores, pages)
    assert len(want) == 3 and got == want
    trace_ids = [r["trace_id"] for p in want for r in p["rows"]]
    assert len(set(trace_ids)) == 6
    for trace_id in trace_ids:
        def fetch(q, cur, trace_id=trace_id) -> Any:
            runs = q.runs.find_runs_by_trace(cur, trace_id, None)
            run = runs[0]
            spans = q.traces.trace_spans(cur, trace_id, run["project"], run["span_start"], run["span_end"],
                                         run["span_count"]).rows
            return runs, spans, q.logs.trace_logs(cur, trace_id, run["project"]), q.scores.scores_of_trace(
                cur, None, trace_id)

        want_trace, got_trace = _both(stores, fetch)
        assert got_trace == want_trace, trace_id
        assert len(want_trace[1]) == want_trace[0][0]["span_count"]


def test_run_filters_equal(stores) -> None:
    for f in (RunFilters(ok=False, modes=None), RunFilters(model="gpt-4o", modes=None), RunFilters(q="agent", modes=None),
              RunFilters(min_steps=2, modes=None), RunFilters(since=datetime(2000, 1, 1), agent="support_agent")):
        want, got = _both(stores, lambda q, cur, f=f: q.runs.list_runs(cur, f, limit=100))
        assert got == want, f
