"""Calling `POST /api/sql` of a real server in tests, and the runs the SQL tests send."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx

from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec


def post_sql(base: str, sql: str, key: str | None = None, timeout: float = 60, **body: Any) -> httpx.Response:
    headers = {"x-api-key": key} if key else {}
    return httpx.post(f"{base}/api/sql", json={"sql": sql, **body}, headers=headers, timeout=timeout)


def rows(base: str, sql: str, key: str | None = None, **body: Any) -> list[list[Any]]:
    """The rows of a JSON answer that must have succeeded completely."""
    r = post_sql(base, sql, key, **body)
    assert r.status_code == 200, f"{sql}: {r.status_code} {r.text[:500]}"
    answer = r.json()
    assert answer["error"] is None and answer["truncated"] is False, answer
    assert answer["row_count"] == len(answer["rows"])
    return answer["rows"]


# Five runs of two agents: (agent, steps, failing tool calls, ok). Each run is one invoke_agent span,
# and per step one step span, one chat span and one tool span (`lookup`), as RunSpec emits them.
RUNS = [("refund", 2, 0, True), ("refund", 3, 1, True), ("refund", 1, 0, True), ("search", 2, 2, False),
        ("search", 2, 0, True)]


def send_runs(base: str, key: str | None = None, agent_prefix: str = "") -> list[RunSpec]:
    emitter = Emitter()
    specs = [
        emitter.run(RunSpec(agent=agent_prefix + agent, steps=steps, failing_tools=failing, ok=ok,
                            stop_reason="finish" if ok else "tool_error_exhausted",
                            start=T0 + timedelta(minutes=i), cost_per_step=0.001 * (i + 1)))
        for i, (agent, steps, failing, ok) in enumerate(RUNS)
    ]
    headers = {"content-type": "application/x-protobuf", **({"x-api-key": key} if key else {})}
    r = httpx.post(f"{base}/v1/traces", content=emitter.request().SerializeToString(), headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    return specs


# Scores sent for the runs of `send_runs` (name, value per run index): a numeric and a boolean score.
SCORES = [("helpfulness", 0.5), ("helpfulness", 1.0), ("correct", True), ("correct", False), ("correct", True)]


def send_scores(base: str, specs: list[RunSpec], key: str | None = None) -> None:
    body = [{"name": name, "value": value, "trace_id": specs[i].trace_id, "source": "human"}
            for i, (name, value) in enumerate(SCORES)]
    headers = {"x-api-key": key} if key else {}
    r = httpx.post(f"{base}/api/scores", json={"scores": body}, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
