"""The per-tool stats served from `tool_rollup` equal an aggregate over every `tool_calls` row.

The rollup is maintained by deltas (a trace's old rows subtracted, its new rows added) in every load
transaction, so it is only right if each delta is. Kernel-shaped runs (errors, truncation, several
agents, models, tools and run modes, 2.5 hours so that whole hour buckets and partial edge hours both occur) are
loaded whole, and cut into small batches shuffled across traces (children before roots, LLM calls
after the tool they chose). For each store and several filters, /api/tools' query must equal the
direct aggregate over tool_calls/tool_carry (what the query did before the rollup), and the rollup
table must equal one rebuilt from scratch.

DuckDB only: ClickHouse keeps no tool rollup (its queries aggregate tool_calls; design.md §3).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import duckdb
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.normalize import spans_table
from ingest.queries.filters import CommonFilters
from ingest.queries.run_scope import facts_from
from ingest.queries.tools import UNNAMED, tool_rows
from ingest.schema import TOOL_ROLLUP_KEYS, TOOL_ROLLUP_NUMBERS, tool_rollup_rows
from ingest.store import upkeep
from ingest.store.loading import ensure_position_row, load_batch
from ingest.store.migrate import migrate
from ingest.store.spool import Position
from tests.ingest.api.analytics_runs import Chat, Run, RunEmitter, Step, Tool
from tests.ingest.api.otlp_runs import T0

RUNS = 150  # 60 s apart: 2.5 hours of runs (whole hour buckets and partial edge hours)
TOOLS = ["search", "fetch", "refund", None]  # None: a tool span without a name
MODES = [None, None, "live", "eval", "shadow"]  # None: the run names no mode (live)
BASE = T0.replace(tzinfo=None)


def random_run(rng: random.Random, i: int) -> Run:
    steps = []
    for _ in range(rng.randint(1, 4)):
        tools = []
        for _ in range(rng.choice([0, 1, 1, 2])):
            failed = rng.random() < 0.25
            tools.append(Tool(
                rng.choice(TOOLS) or "", {"i": i}, "r" * rng.randint(0, 300),
                cost=rng.choice([None, 0.001, 0.0137]),
                error_type=rng.choice(["timeout", "exception", "denied"]) if failed else None,
                error_message=f"failed after {rng.randint(1, 99)} s" if failed else None,
                decision="denied" if rng.random() < 0.05 else "executed",
                observation_tokens=rng.choice([None, rng.randint(1, 400)]),
                dropped_tokens=rng.choice([0, 0, 25]),
            ))  # fmt: skip
        chats = [Chat(cost=rng.choice([None, 0.01, 0.1 / 3]), model=rng.choice(["m1", "m2"]))
                 for _ in range(rng.randint(1, 2))]  # fmt: skip
        steps.append(Step(chats=chats, tools=tools))
    steps.append(Step(chats=[Chat(cost=0.02)]))
    return Run(steps=steps, agent=rng.choice(["support", "billing"]), version=rng.choice(["1", "2"]),
               start=T0 + timedelta(seconds=60 * i), mode=rng.choice(MODES))  # fmt: skip


def single_span_requests() -> list[ExportTraceServiceRequest]:
    rng = random.Random(11)
    emitter = RunEmitter()
    for i in range(RUNS):
        emitter.run(random_run(rng, i))
    return emitter.requests_one_span_each()


def batched(
    requests: list[ExportTraceServiceRequest], size: int, seed: int | None
) -> list[ExportTraceServiceRequest]:
    """Single-span requests regrouped into batches of `size` spans, shuffled across traces (children
    before roots, LLM calls after the tool they chose) unless `seed` is None."""
    order = list(requests)
    if seed is not None:
        random.Random(seed).shuffle(order)
    out = []
    for i in range(0, len(order), size):
        req = ExportTraceServiceRequest()
        for one in order[i : i + size]:
            req.resource_spans.extend(one.resource_spans)
        out.append(req)
    return out


def load(requests: list[ExportTraceServiceRequest]) -> duckdb.DuckDBPyConnection:
    conn = duckdb.connect()
    migrate(conn)
    now = datetime.now(UTC).replace(tzinfo=None)
    ensure_position_row(conn, now)
    for i, request in enumerate(requests):
        load_batch(conn, spans_table("p", request, datetime.now(UTC)), Position(0, 0), now)
        if i % 7 == 3:  # upkeep passes between some loads, as the writer runs them, each trace's rows
            upkeep.run_pass(conn, max_traces=5)  # recomputed several times, a few traces per pass
    while upkeep.run_pass(conn, max_traces=1000).remaining:
        pass
    return conn


@pytest.fixture(scope="module")
def stores() -> dict[str, duckdb.DuckDBPyConnection]:
    requests = single_span_requests()
    built = {"whole": load(batched(requests, 100_000, None)), "shuffled": load(batched(requests, 61, seed=3))}
    yield built
    for conn in built.values():
        conn.close()


# The aggregate the query ran over tool_calls before the rollup existed: the reference.
REFERENCE = """
SELECT coalesce(t.tool_name, ?) AS tool, count(*) AS calls, count(DISTINCT t.trace_id) AS runs,
    count(*) FILTER (WHERE t.is_error) AS errors,
    histogram(coalesce(t.error_type, 'error')) FILTER (WHERE t.is_error) AS errors_by_type,
    count(*) FILTER (WHERE t.error_type = 'timeout') AS timeouts,
    count(*) FILTER (WHERE t.decision = 'denied' OR t.error_type = 'denied') AS denials,
    quantile_cont(t.duration_ms, 0.5) AS p50_ms, quantile_cont(t.duration_ms, 0.95) AS p95_ms,
    count(*) FILTER (WHERE t.truncated) AS truncated_calls,
    coalesce(sum(t.dropped_tokens), 0) AS dropped_tokens,
    coalesce(sum(t.observation_tokens), 0) AS observation_tokens,
    count(*) FILTER (WHERE t.observation_source = 'estimate') AS estimated_observations,
    coalesce(sum(t.direct_cost_usd), 0.0) AS direct, coalesce(sum(t.decision_cost_usd), 0.0) AS decision,
    coalesce(sum(t.decision_llm_calls), 0.0) AS decision_llm_calls,
    coalesce(sum(t.decision_input_tokens), 0.0) AS decision_input_tokens,
    coalesce(sum(t.decision_output_tokens), 0.0) AS decision_output_tokens,
    list(DISTINCT t.trace_id) AS traces
{scope}
GROUP BY tool
"""
CARRY = "SELECT coalesce(c.tool_name, ?) AS tool, c.model, sum(c.resent_tokens) {scope} GROUP BY ALL"


def reference(conn: duckdb.DuckDBPyConnection, filters: CommonFilters) -> tuple[dict, dict]:
    scope, params = facts_from("tool_calls", "t", filters)
    cur = conn.execute(REFERENCE.format(scope=scope), [UNNAMED, *params])
    names = [d[0] for d in cur.description]
    stats = {r[0]: dict(zip(names, r, strict=True)) for r in cur.fetchall()}
    carry_scope, carry_params = facts_from("tool_carry", "c", filters)
    carry: dict[str, dict[str, int]] = {}
    for tool, model, tokens in conn.execute(
        CARRY.format(scope=carry_scope), [UNNAMED, *carry_params]
    ).fetchall():
        carry.setdefault(tool, {})[model] = int(tokens)
    return stats, carry


FILTERS = {
    "everything": CommonFilters(modes=None),
    "live (the default)": CommonFilters(),
    "eval, unaligned range": CommonFilters(
        since=BASE + timedelta(minutes=7, seconds=13), until=BASE + timedelta(minutes=128), modes=frozenset({"eval"})
    ),
    "live and shadow, one agent": CommonFilters(agent="billing", modes=frozenset({"live", "shadow"})),
    "unaligned range": CommonFilters(
        since=BASE + timedelta(minutes=7, seconds=13), until=BASE + timedelta(minutes=128)
    ),
    "since only": CommonFilters(since=BASE + timedelta(minutes=59, seconds=59)),
    "until only, one agent": CommonFilters(until=BASE + timedelta(hours=1, minutes=1), agent="support"),
    "inside one hour": CommonFilters(since=BASE + timedelta(minutes=10), until=BASE + timedelta(minutes=40)),
    "another project": CommonFilters(projects=frozenset({"other"})),
}
COUNTS = ("calls", "runs", "errors", "timeouts", "denials", "truncated_calls", "dropped_tokens", "observation_tokens",
          "estimated_observations")  # fmt: skip
AMOUNTS = ("direct", "decision", "decision_llm_calls", "decision_input_tokens", "decision_output_tokens",
           "p50_ms", "p95_ms")  # fmt: skip


@pytest.mark.parametrize("store", ["whole", "shuffled"])
@pytest.mark.parametrize("name", list(FILTERS))
def test_tool_rows_equal_the_direct_aggregate(stores, store, name):
    conn = stores[store]
    filters = FILTERS[name]
    expected, expected_carry = reference(conn, filters)
    got = tool_rows(conn.cursor(), filters)
    stats = {s["tool"]: s for s in got.stats}
    assert set(stats) == set(expected)
    if name != "another project":
        assert expected, "the filter should select some tool calls"
    for tool, want in expected.items():
        have = stats[tool]
        assert {k: have[k] for k in COUNTS} == {k: want[k] for k in COUNTS}, tool
        for k in AMOUNTS:
            assert have[k] == pytest.approx(want[k], rel=1e-9, abs=1e-9), (tool, k)
        assert got.errors_by_type[tool] == {str(k): v for k, v in (want["errors_by_type"] or {}).items()}
        assert have["example_candidates"] and set(have["example_candidates"]) <= set(want["traces"])
    assert got.carry_tokens == expected_carry


@pytest.mark.parametrize("store", ["whole", "shuffled"])
def test_rollup_maintained_by_deltas_equals_one_rebuilt_from_scratch(stores, store):
    conn = stores[store]
    columns = ", ".join((*TOOL_ROLLUP_KEYS, *TOOL_ROLLUP_NUMBERS))
    order = ", ".join(TOOL_ROLLUP_KEYS)
    stored = conn.execute(f"SELECT {columns} FROM tool_rollup ORDER BY {order}").fetchall()
    scratch = tool_rollup_rows("SELECT *, 1 AS sign FROM tool_calls", "SELECT *, 1 AS sign FROM tool_carry")
    rebuilt = conn.execute(f"SELECT {columns} FROM ({scratch}) ORDER BY {order}").fetchall()
    assert len(stored) > 50 and stored == rebuilt
    hours = {row[0] for row in stored}
    assert len(hours) >= 2, "the runs should span more than one hour bucket"


@pytest.mark.parametrize("store", ["whole", "shuffled"])
def test_analytics_rows_carry_their_runs_mode_whatever_the_arrival_order(stores, store):
    """A run's mode is on its root span, which may come after its tool and LLM spans: the rows
    written before it must take it once it arrives, or eval calls would count as live."""
    conn = stores[store]
    for table in ("tool_calls", "tool_carry", "run_models"):
        rows, wrong, moded = conn.execute(
            f"SELECT count(*), count(*) FILTER (WHERE x.mode IS DISTINCT FROM r.mode), count(r.mode) "
            f"FROM {table} x JOIN runs r USING (project, trace_id)"
        ).fetchall()[0]
        assert rows and moded and wrong == 0, table
