"""Token counts and costs beyond any real value (2^63-1 on two chat spans of one trace, doubles of
1e19 and 1e300, inf, a string of 18 nines on many spans, a tool cost of 1e308, a negative cost) are
stored as NULL in their promoted columns and counted; the request's spans are all stored, the run's
totals are those of its valid values, no record is dead-lettered, and the analytics tables (runs,
run_models, tool_rollup's DECIMAL(38, 12) sums) keep working.

Before: the load failed (BIGINT overflow in the run's sums, or "Python int too large" in the
normalizer) and the whole request was dead-lettered after being acknowledged."""

from __future__ import annotations

import re

import httpx
import pytest

from ingest.normalize.values import MAX_COUNT
from tests.ingest.api.analytics_runs import TEST_PRICES, Chat, Run, RunEmitter, Step, Tool
from tests.ingest.api.harness import Server

INT64_MAX = 2**63 - 1
OUTPUT_PRICE = 0.002  # USD per output token in TEST_PRICES
NINES = "999999999999999999"


def the_run() -> Run:
    return Run(
        steps=[
            Step(
                chats=[Chat(input_tokens=INT64_MAX, cost=0.01), Chat(input_tokens=INT64_MAX, cost=0.01)],
                tools=[Tool("search", cost=1e308, observation_tokens=2**62, dropped_tokens=2**61)],
            ),
            Step(
                chats=[Chat(input_tokens=1e19, cost=1e300), Chat(input_tokens=1e300, cost=float("inf"))],  # type: ignore[arg-type]
                tools=[Tool("fetch", cost=-5.0)],
            ),
            Step(chats=[Chat(input_tokens=NINES, cost=0.01) for _ in range(20)]),  # type: ignore[arg-type]
            Step(chats=[Chat(input_tokens=MAX_COUNT, cost=0.25)]),  # the bound itself is a valid count
        ]
    )


SPANS = 1 + 4 + 25 + 2 + 1  # run, steps, chats, tools, the truncate span
NULLED_COUNTS = 2 + 1 + 1 + 20 + 2  # input tokens above MAX_COUNT, then observation and dropped tokens
NULLED_COSTS = 4  # 1e300, inf, 1e308, -5


@pytest.fixture
def server(start_ingest_server, tmp_path) -> Server:
    prices = tmp_path / "prices.toml"
    prices.write_text(TEST_PRICES, encoding="utf-8")
    # One normalize worker process: the out-of-range tally must travel back with the table.
    running = start_ingest_server(price_file=prices, grpc_port=0, normalize_processes=1)
    return Server(running.http_url, running.store, running.settings)


def metric(server: Server, name: str, labels: str) -> float:
    text = httpx.get(server.url + "/metrics").text
    match = re.search(rf"^{name}\{{{labels}\}} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def test_out_of_range_numbers_are_nulled_counted_and_the_request_is_stored(server: Server) -> None:
    emitter = RunEmitter()
    run = emitter.run(the_run())
    server.send(emitter.request())

    stats = server.store.stats()
    assert stats.records_dead_lettered == 0 and stats.spans_dead_lettered == 0
    trace = server.get(f"/api/traces/{run.trace_id}")
    assert trace.status_code == 200, trace.text
    assert len(trace.json()["spans"]) == SPANS

    runs = server.get("/api/runs").json()["runs"]
    assert [r["trace_id"] for r in runs] == [run.trace_id]
    stored = runs[0]
    assert stored["llm_calls"] == 25
    assert stored["input_tokens"] == MAX_COUNT  # only the valid count; the nulled ones add nothing
    assert stored["output_tokens"] == 25 * 10
    # valid span costs: 0.01 x 22 + 0.25; the two chats with cost 1e300 / inf are priced by the
    # table instead (output tokens only: their input counts were nulled too); tool costs nulled.
    assert stored["cost_usd"] == pytest.approx(0.01 * 22 + 0.25 + 2 * 10 * OUTPUT_PRICE)

    by_model = server.get("/api/cost", group_by="model")
    assert by_model.status_code == 200, by_model.text
    tools = server.get("/api/tools")
    assert tools.status_code == 200, tools.text
    calls = {t["tool"]: t for t in tools.json()["tools"]}
    assert set(calls) == {"search", "fetch"}
    assert calls["search"]["cost"]["direct"] == 0 and calls["fetch"]["cost"]["direct"] == 0

    assert metric(server, "steplens_values_out_of_range_total", 'kind="count"') == NULLED_COUNTS
    assert metric(server, "steplens_values_out_of_range_total", 'kind="cost_usd"') == NULLED_COSTS
    # the raw values are still there, in the span's attributes
    chats = [s for s in trace.json()["spans"] if s.get("operation") == "llm"]
    assert any(INT64_MAX in s["attributes"].values() for s in chats)


def test_sums_of_many_maximal_values_do_not_overflow(server: Server) -> None:
    """Every span at the bound: sums over the runs stay exact (they fit BIGINT by construction)."""
    emitter = RunEmitter()
    for _ in range(3):
        emitter.run(Run(steps=[Step(chats=[Chat(input_tokens=MAX_COUNT, output_tokens=MAX_COUNT)] * 40)]))
    server.send(emitter.request())
    assert server.store.stats().records_dead_lettered == 0
    runs = server.get("/api/runs").json()["runs"]
    assert [r["input_tokens"] for r in runs] == [40 * MAX_COUNT] * 3
    overview = server.get("/api/cost", group_by="model")
    assert overview.status_code == 200, overview.text


def test_price_table_cost_beyond_the_bound_is_nulled_too(start_ingest_server, tmp_path) -> None:
    """A price file with an absurd price (1e30 USD per 1M tokens) prices no span beyond the bound:
    the cost is unknown (NULL), counted, and the run and tool analytics still load."""
    prices = tmp_path / "absurd.toml"
    prices.write_text(TEST_PRICES + '\n[models."absurd"]\ninput = 1e30\noutput = 1e30\n', encoding="utf-8")
    running = start_ingest_server(price_file=prices, grpc_port=0)
    server = Server(running.http_url, running.store, running.settings)
    emitter = RunEmitter()
    run = emitter.run(Run(steps=[Step(chats=[Chat(model="absurd")], tools=[Tool("search")]), Step()]))
    server.send(emitter.request())
    assert server.store.stats().records_dead_lettered == 0
    (stored,) = server.get("/api/runs").json()["runs"]
    assert stored["trace_id"] == run.trace_id
    assert stored["input_tokens"] == 200  # both chats' tokens are counted; only the absurd cost is dropped
    assert stored["cost_usd"] == pytest.approx(100 * 0.001 + 10 * OUTPUT_PRICE)  # the acme-test chat alone
    assert server.get("/api/tools").status_code == 200
    assert metric(server, "steplens_values_out_of_range_total", 'kind="cost_usd"') == 1
