"""The filter compiler's ClickHouse target (ingest/filters/dialect.py) means what its DuckDB target
means: over the same attributes texts (written the ways a JSON encoder may write them) and the same
promoted columns, every filter expression selects the same rows on real chDB as on real DuckDB, with
and without the raw-text pre-filter, and the search() term finds exactly its hits."""

from __future__ import annotations

import json
from datetime import datetime

import duckdb
import pyarrow as pa
import pytest

from ingest.filters.compile import SearchHits, run_predicate, span_predicate
from ingest.filters.parse import parse_filter
from ingest.store.clickhouse.cursor import ClickHouseCursor
from ingest.store.clickhouse.transport import ChdbTransport
from tests.ingest.filters.test_attribute_prefilter_never_drops_a_span_the_exact_check_matches import (
    ENCODERS,
    KEY,
    OTHER,
    VALUES,
    _expressions,
)

T0 = datetime(2026, 1, 1, 12, 0, 0)


def _span_rows() -> list[tuple[int, str, str | None, float | None, bool | None]]:
    rows, i = [], 0
    for value in VALUES:
        for key in (KEY, OTHER):
            for encode in ENCODERS:
                attrs = encode({"before": 1, key: value, "after": "z"})
                rows.append((i, attrs, ["refund", "search", None][i % 3], [0.5, 2.0, None][i % 3], [True, False, None][i % 3]))
                i += 1
    rows.append((i, json.dumps({"nested": {KEY: "500"}}), None, None, None))
    rows.append((i + 1, json.dumps({KEY: None}), "refund", 1.0, True))  # JSON null: exists, no text
    return rows


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    rows = _span_rows()
    duck = duckdb.connect()
    duck.execute(
        "CREATE TABLE spans (i INTEGER, project VARCHAR, trace_id VARCHAR, span_id VARCHAR, start_time TIMESTAMP, "
        "attributes JSON, tool_name VARCHAR, agent_name VARCHAR, cost_usd DOUBLE, run_ok BOOLEAN)"
    )
    duck.execute(
        "CREATE TABLE runs (i INTEGER, project VARCHAR, trace_id VARCHAR, models VARCHAR[], cost_usd DOUBLE, ok BOOLEAN)"
    )
    duck.executemany(
        "INSERT INTO spans VALUES (?, 'p', ?, ?, ?, ?, ?, NULL, ?, ?)",
        [(i, f"t{i % 7}", f"s{i}", T0, a, tool, cost, ok) for i, a, tool, cost, ok in rows],
    )
    runs = [(t, f"t{t}", [["gpt-4o", "claude"], ["gpt-4o-mini"], []][t % 3], [1.0, 0.25, None][t % 3],
             [True, False, None][t % 3]) for t in range(8)]  # fmt: skip
    duck.executemany("INSERT INTO runs VALUES (?, 'p', ?, ?, ?, ?)", runs)
    transport = ChdbTransport(str(tmp_path_factory.mktemp("chdb")), database="filters")
    transport.command(
        "CREATE TABLE spans (i Int32, project String, trace_id String, span_id String, start_time DateTime64(6, 'UTC'), "
        "attributes Nullable(String), tool_name Nullable(String), agent_name Nullable(String), "
        "cost_usd Nullable(Float64), run_ok Nullable(Bool)) ENGINE = MergeTree ORDER BY i"
    )
    transport.command(
        "CREATE TABLE runs (i Int32, project String, trace_id String, models Array(String), "
        "cost_usd Nullable(Float64), ok Nullable(Bool)) ENGINE = MergeTree ORDER BY i"
    )
    transport.insert_arrow("spans", duck.sql("SELECT * FROM spans").to_arrow_table().cast(pa.schema([
        ("i", pa.int32()), ("project", pa.string()), ("trace_id", pa.string()), ("span_id", pa.string()),
        ("start_time", pa.timestamp("us", "UTC")), ("attributes", pa.string()), ("tool_name", pa.string()),
        ("agent_name", pa.string()), ("cost_usd", pa.float64()), ("run_ok", pa.bool_()),
    ])))  # fmt: skip
    transport.insert_arrow("runs", duck.sql("SELECT * FROM runs").to_arrow_table())
    yield duck, ClickHouseCursor(transport)
    transport.close()
    duck.close()


def _span_ids(engine, expression: str, dialect: str, prefilter: bool = True, resolve=None) -> set[int]:
    pred = span_predicate(parse_filter(expression), expression, "s", resolve, prefilter, dialect=dialect)
    return {r[0] for r in engine.execute(f"SELECT i FROM spans s WHERE {pred.sql}", pred.params).fetchall()}


COLUMN_EXPRESSIONS = [
    'tool_name = "refund"', 'tool_name != "refund"', 'tool_name in ("refund", "search")', 'tool_name contains "FUN"',
    "tool_name exists", "not tool_name exists", "cost_usd > 1", "cost_usd <= 0.5", "run_ok = true", "run_ok != true",
    'not (tool_name = "refund" or cost_usd > 1)', 'attributes["after"] = "z" and tool_name = "search"',
]


@pytest.mark.parametrize("expression", _expressions() + COLUMN_EXPRESSIONS)
def test_span_filter_selects_the_same_rows_on_both(engines, expression):
    duck, ch = engines
    expected = _span_ids(duck, expression, "duckdb")
    assert _span_ids(ch, expression, "clickhouse") == expected
    assert _span_ids(ch, expression, "clickhouse", prefilter=False) == expected


def test_the_cases_are_not_vacuous(engines):
    duck, _ = engines
    cases = _expressions() + COLUMN_EXPRESSIONS
    assert len(cases) >= 100
    assert sum(1 for e in cases if _span_ids(duck, e, "duckdb")) >= 0.7 * len(cases)


@pytest.mark.parametrize(
    "expression",
    ['models = "gpt-4o"', 'models != "gpt-4o"', 'models in ("claude", "gpt-4o-mini")', 'models contains "MINI"',
     'cost_usd > 0.5 or ok = false', 'tool_name = "refund"', 'cost_usd >= 1 and attributes["after"] = "z"',
     'not tool_name = "search"', 'span.cost_usd > 1 and ok = true'],
)  # fmt: skip
def test_run_filter_selects_the_same_runs_on_both(engines, expression):
    duck, ch = engines
    got = {}
    for name, engine in (("duckdb", duck), ("clickhouse", ch)):
        pred = run_predicate(parse_filter(expression), expression, dialect=name)
        got[name] = {r[0] for r in engine.execute(f"SELECT i FROM runs WHERE {pred.sql}", pred.params).fetchall()}
    assert got["clickhouse"] == got["duckdb"]
    assert got["duckdb"]  # each case selects something


def test_search_term_selects_exactly_its_hits_on_clickhouse(engines):
    duck, ch = engines
    keys = (["p", "p", "other"], ["t1", "t3", "t1"], ["s1", "s3", "s1"])
    duck.register("hits_0", pa.table({"project": keys[0], "trace_id": keys[1], "span_id": keys[2]}))
    expression = 'search("anything") or tool_name = "nothing-like-this"'
    got_duck = _span_ids(duck, expression, "duckdb", resolve=lambda _t: SearchHits("hits_0", T0, T0))
    got_ch = _span_ids(ch, expression, "clickhouse", resolve=lambda _t: SearchHits("", T0, T0, keys))
    assert got_ch == got_duck == {1, 3}
