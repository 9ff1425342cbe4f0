"""Data for bench/query_bench.py: template runs through the REAL pipeline, then replicated in SQL.

Why replicate instead of loading 10M spans through the normalizer: at ~30-50k spans/s that alone
would take many minutes on this machine and measure ingest, not queries. So:

1. ~100 template runs (kernel-shaped: invoke_agent > step i > budget_check, chat (1-2 attempts),
   execute_tool, truncate_observation; ~20% failed with templated errors; several agents, versions,
   models, tools; content attributes on) are made with the OpenTelemetry SDK, encoded as OTLP,
   normalized by `ingest.normalize.spans_table` and loaded by `ingest.store.loading.load_batch`,
   i.e. exactly what the server does, so spans, runs, tool_calls, tool_carry and run_models hold
   the real derived values.
2. Every table is then copied N times in SQL with new trace/span ids (md5 of the old id and the
   copy number) and start times shifted across the range, in time order (as ingest inserts).
   Column values other than ids and times are the pipeline's own.
3. tool_rollup and trace_index are then rebuilt from the copies by the schema migration's backfill.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import duckdb
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from ingest.normalize import spans_table
from ingest.schema import TOOL_ROLLUP_REBUILD, TRACE_INDEX_BACKFILL
from ingest.store import upkeep
from ingest.store.loading import ensure_position_row, load_batch
from ingest.store.migrate import migrate
from ingest.store.spool import Position
from tracer import conventions as c

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
T0 = datetime(2025, 1, 1, tzinfo=UTC)
AGENTS = [("support", "1.0"), ("support", "1.1"), ("billing", "2.0"), ("research", "0.9")]
MODELS = ["gpt-4o-mini", "gpt-4o", "claude-3-5-haiku-20241022"]
TOOLS = ["search", "fetch_order", "refund", "lookup_customer", "send_email", "summarize"]
ERRORS = [
    ("timeout", "{tool} timed out after {n} s"),
    ("exception", "KeyError: 'order_{n}' while reading /data/orders/{n}.json"),
    ("invalid_arguments", "field 'amount' must be <= {n}"),
]


def _ns(ts: datetime) -> int:
    return (ts - EPOCH) // timedelta(microseconds=1) * 1000


def template_requests(n_runs: int, seed: int = 7) -> list:
    """OTLP export requests holding `n_runs` kernel-shaped runs."""
    rng = random.Random(seed)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({c.SERVICE_NAME: "bench-agents"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    requests = []
    for i in range(n_runs):
        agent, version = AGENTS[i % len(AGENTS)]
        model = MODELS[rng.randrange(len(MODELS))]
        steps = rng.randint(2, 12)
        failed = rng.random() < 0.2
        clock = [T0 + timedelta(seconds=30 * i)]

        def tick(ms: int = 40, clock: list[datetime] = clock) -> int:
            clock[0] += timedelta(milliseconds=ms)
            return _ns(clock[0])

        stop = rng.choice(["tool_error_exhausted", "max_steps", "llm_unavailable"]) if failed else "finish"
        root = tracer.start_span(
            f"invoke_agent {agent}",
            start_time=_ns(clock[0]),
            attributes={
                c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: agent,
                c.GEN_AI_AGENT_VERSION: version, c.GEN_AI_REQUEST_MODEL: model, c.RUN_OK: not failed,
                c.RUN_STOP_REASON: stop, c.RUN_STEPS: steps, c.RUN_MODE: "live",
                c.RUN_TASK: "Customer asks about order status and a refund " * 3,
            },
        )  # fmt: skip
        rctx = trace.set_span_in_context(root)
        for s in range(steps):
            last = s == steps - 1
            tool = TOOLS[rng.randrange(len(TOOLS))]
            step = tracer.start_span(
                f"step {s}", context=rctx, start_time=tick(),
                attributes={c.STEP_INDEX: s, c.STEP_KIND: "finish" if last else "tool",
                            c.STEP_ACTION: "finish" if last else tool, c.STEP_PARSE: "ok",
                            c.STEP_THOUGHT: "I should look this up before answering. " * 2,
                            c.STEP_OBSERVATION: json.dumps({"result": "x" * rng.randint(50, 400)})},
            )  # fmt: skip
            sctx = trace.set_span_in_context(step)
            budget = tracer.start_span(c.SPAN_BUDGET_CHECK, context=sctx, start_time=tick(1))
            budget.set_attributes({c.budget_used("steps"): s, c.budget_limit("steps"): 20, c.BUDGET_HEADROOM: 0.5})
            budget.end(end_time=tick(1))
            for attempt in range(2 if rng.random() < 0.1 else 1):
                tokens_in = 800 + 150 * s
                chat = tracer.start_span(
                    f"chat {model}", context=sctx, kind=SpanKind.CLIENT, start_time=tick(),
                    attributes={c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_PROVIDER_NAME: "openai",
                                c.GEN_AI_REQUEST_MODEL: model, c.GEN_AI_USAGE_INPUT_TOKENS: tokens_in,
                                c.GEN_AI_USAGE_OUTPUT_TOKENS: 60, c.LLM_ATTEMPT: attempt + 1},
                )  # fmt: skip
                if failed and stop == "llm_unavailable" and last:
                    chat.set_attribute(c.ERROR_TYPE, "RateLimitError")
                    chat.set_status(Status(StatusCode.ERROR, f"Rate limit reached, retry in {rng.randint(1, 60)}s"))
                chat.end(end_time=tick(300))
            if last:
                step.end(end_time=tick())
                continue
            span = tracer.start_span(
                f"execute_tool {tool}", context=sctx, start_time=tick(),
                attributes={c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: tool,
                            c.TOOL_DECISION: "executed", c.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"id": s}),
                            c.GEN_AI_TOOL_CALL_RESULT: "r" * rng.randint(40, 800),
                            c.COST_USD: 0.001 if tool == "search" else 0.0},
            )  # fmt: skip
            if failed and stop == "tool_error_exhausted" and s >= steps - 3:
                code, text = ERRORS[rng.randrange(len(ERRORS))]
                span.set_attribute(c.ERROR_TYPE, code)
                span.set_status(Status(StatusCode.ERROR, text.format(tool=tool, n=rng.randint(1, 999))))
            span.end(end_time=tick(rng.randint(5, 900)))
            out = rng.randint(20, 500)
            truncate = tracer.start_span(
                c.SPAN_TRUNCATE, context=sctx, start_time=tick(1),
                attributes={c.TRUNCATE_LIMIT_TOKENS: 400, c.TRUNCATE_INPUT_TOKENS: out,
                            c.TRUNCATE_OUTPUT_TOKENS: min(out, 400), c.TRUNCATE_DROPPED_TOKENS: max(0, out - 400),
                            c.TRUNCATE_TRUNCATED: out > 400},
            )  # fmt: skip
            truncate.end(end_time=tick(1))
            step.end(end_time=tick())
        if failed:
            root.set_attribute(c.ERROR_TYPE, stop)
            root.set_status(Status(StatusCode.ERROR, stop))
        root.end(end_time=tick())
        if (i + 1) % 20 == 0 or i == n_runs - 1:
            requests.append(encode_spans(exporter.get_finished_spans()))
            exporter.clear()
    provider.shutdown()
    return requests


def load_templates(conn: duckdb.DuckDBPyConnection, n_runs: int) -> int:
    """Migrate, then load the template runs with the store's own loader. Returns spans loaded."""
    migrate(conn)
    now = datetime.now(UTC).replace(tzinfo=None)
    ensure_position_row(conn, now)
    total = 0
    for request in template_requests(n_runs):
        table = spans_table("bench", request, datetime.now(UTC))
        total += load_batch(conn, table, Position(0, 0), now).inserted
    while upkeep.run_pass(conn, max_traces=10_000).remaining:  # the analytics rows, as the writer does
        pass
    return total


def _tid(col: str) -> str:
    return f"substr(md5({col} || ':' || k.copy), 1, 32)"


def _sid(col: str) -> str:
    return f"CASE WHEN {col} IS NULL THEN NULL ELSE substr(md5({col} || ':' || k.copy), 1, 16) END"


# For every table: the id columns to remap and the time columns to shift.
REPLICAS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "spans": (
        {"trace_id": _tid("trace_id"), "span_id": _sid("span_id"), "parent_span_id": _sid("parent_span_id")},
        ("start_time", "end_time", "ingested_at"),
    ),
    "runs": (
        {"trace_id": _tid("trace_id"), "root_span_id": _sid("root_span_id"),
         "last_error_span_id": _sid("last_error_span_id")},
        ("start_time", "end_time", "span_start", "span_end", "last_error_at", "updated_at"),
    ),  # fmt: skip
    "tool_calls": ({"trace_id": _tid("trace_id"), "span_id": _sid("span_id")}, ("start_time", "end_time", "run_start")),
    "tool_carry": ({"trace_id": _tid("trace_id"), "span_id": _sid("span_id")}, ("start_time", "run_start")),
    "run_models": ({"trace_id": _tid("trace_id")}, ("start_time", "run_start")),
}


def replicate(conn: duckdb.DuckDBPyConnection, copies: int, spread: timedelta, chunk: int = 200) -> None:
    """Copy every table `copies` times over `spread`, in time order, `chunk` copies per INSERT."""
    step_us = max(1, (spread // timedelta(microseconds=1)) // max(copies, 1))
    for table in REPLICAS:
        conn.execute(f"CREATE OR REPLACE TEMP TABLE tpl_{table} AS SELECT * FROM {table}")
        conn.execute(f"DELETE FROM {table}")
    for first in range(0, copies, chunk):
        last = min(copies, first + chunk)
        for table, (ids, times) in REPLICAS.items():
            replace = [f"{expr} AS {col}" for col, expr in ids.items()]
            replace += [f"{col} + to_microseconds(k.copy * {step_us}) AS {col}" for col in times]
            conn.execute(
                f"INSERT INTO {table} BY NAME SELECT t.* REPLACE ({', '.join(replace)}) "
                f"FROM tpl_{table} t CROSS JOIN (SELECT range AS copy FROM range({first}, {last})) k "
                f"ORDER BY {times[0]}"
            )
    rebuild_derived(conn)
    conn.execute("CHECKPOINT")


def rebuild_derived(conn: duckdb.DuckDBPyConnection) -> None:
    """tool_rollup and trace_index from the replicated tables, with the migration's own backfill SQL
    (a rollup cell is an hour of run starts, which shifting copies by arbitrary offsets would break).
    trace_index is rewritten in run start order, as a live store appends it, not key-sorted."""
    for statement in TOOL_ROLLUP_REBUILD:  # the DELETE and the INSERT, keyed as the loader keys cells
        conn.execute(statement)
    conn.execute("DELETE FROM trace_index")
    conn.execute(TRACE_INDEX_BACKFILL.replace("ORDER BY 1", "ORDER BY 4"))
