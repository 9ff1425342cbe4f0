"""Retention removes the analytics rows derived from old spans (tool_calls, tool_carry, run_models, plan_spans)
together with the spans and runs, and keeps the recent ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import S, agent_run, request
from tracer import conventions as c

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store

TABLES = ("tool_calls", "run_models", "plan_spans", "runs")


def _counts(store) -> dict[str, int]:
    with store.read() as cur:
        return {t: cur.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


async def test_old_tool_rows_go_with_their_runs(open_store) -> None:
    store = open_store(store_kwargs={"retention_chunk_rows": 3}, retention_days=7)
    now = datetime.now(UTC)
    for days in (20, 10, 1):
        root, kids = agent_run(start=now - timedelta(days=days), steps=2)
        plan = S(root.trace_id, "plan support_agent", parent=root.span_id, start=root.start,
                 duration=timedelta(milliseconds=50),
                 attrs={c.GEN_AI_OPERATION_NAME: c.OP_PLAN, c.PLAN_VERSION: 1, c.PLAN_STEPS: 2})
        await store.submit("p", request([root, plan, *kids]))
    assert store.wait_loaded(10)
    kept = {"tool_calls": 2, "run_models": 1, "plan_spans": 1, "runs": 1}
    before = _counts(store)
    if store.name == "duckdb":
        assert before == {"tool_calls": 6, "run_models": 3, "plan_spans": 3, "runs": 3}
    else:  # ClickHouse's TTL may drop rows already expired when they are written
        assert before in ({"tool_calls": 6, "run_models": 3, "plan_spans": 3, "runs": 3}, kept), before
    store.sweep_retention(timeout=20)
    assert _counts(store) == kept
    with store.read() as cur:
        oldest = cur.execute("SELECT min(start_time) FROM tool_calls").fetchone()[0]
    assert oldest > now.replace(tzinfo=None) - timedelta(days=7)
