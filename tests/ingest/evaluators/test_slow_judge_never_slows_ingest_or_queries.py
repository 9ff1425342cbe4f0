"""A judge that takes seconds per call (a slow provider) keeps its evaluations waiting, never the
server: while every evaluator thread is busy with it, OTLP exports are acknowledged and queries
answered as fast as without it, and what was exported is stored.

The failure this covers: evaluations run on the event loop or the store's writer, where a judge's
three seconds stalled every export behind them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from ingest.evaluators.rules import EvaluatorRule
from tests.ingest.api.otlp_runs import Emitter, RunSpec
from tests.ingest.evaluators.agent_runs import AgentRun, act, evaluators_of, final, run_agents, wait_for
from tests.support.fake_openai import FakeOpenAI, TextReply

JUDGE_DELAY_S = 3.0


def test_exports_and_queries_stay_fast_while_the_judge_is_slow(start_ingest_server: Callable[..., Any]) -> None:
    with FakeOpenAI(default=TextReply('{"score": true, "reason": "ok"}', delay_s=JUDGE_DELAY_S)) as fake:
        rule = EvaluatorRule.model_validate({
            "name": "slow-judge", "delay": "1s", "lookback": "1h", "agent": "calc",
            "evaluator": {"kind": "judge", "model": "gpt-4o-mini", "base_url": fake.base_url},
            "score": {"name": "correct"},
        })
        srv = start_ingest_server(grpc_port=0, evaluators=[rule], evaluator_concurrency=2,
                                  evaluator_poll_interval_s=0.2)
        run_agents(srv.http_url, [AgentRun([act("add", a=i, b=1), final(str(i + 1))]) for i in range(4)])
        wait_for(lambda: len(fake.requests) >= 2, timeout=60, every=0.1)  # both evaluator threads are waiting

        emitter = Emitter()
        sent, slowest_export, slowest_query = [], 0.0, 0.0
        with httpx.Client(base_url=srv.http_url, timeout=30) as client:
            for i in range(20):
                sent.append(emitter.run(RunSpec(agent="busy", start=RunSpec().start.replace(minute=i))).trace_id)
                t0 = time.monotonic()
                r = client.post("/v1/traces", content=emitter.request().SerializeToString(),
                                headers={"content-type": "application/x-protobuf"})
                slowest_export = max(slowest_export, time.monotonic() - t0)
                assert r.status_code == 200, r.text
                t0 = time.monotonic()
                assert client.get("/api/runs", params={"limit": 5}).status_code == 200
                slowest_query = max(slowest_query, time.monotonic() - t0)
        still_judging = evaluators_of(srv.http_url)["slow-judge"]["summary"]["evaluated"] < 4
        assert srv.store.wait_loaded(30)
        stored = {r["trace_id"] for r in httpx.get(srv.http_url + "/api/runs", params={
            "agent": "busy", "since": "2025-01-01", "limit": 100}, timeout=30).json()["runs"]}
        assert stored == set(sent)
        # generous bounds for a loaded 2-core machine; a stalled loop would wait out a 3 s judge call
        assert slowest_export < JUDGE_DELAY_S / 2 and slowest_query < JUDGE_DELAY_S / 2, (slowest_export, slowest_query)
        assert still_judging, "the exports were timed after the judging ended, so they proved nothing"
        wait_for(lambda: evaluators_of(srv.http_url)["slow-judge"]["summary"]["evaluated"] == 4, timeout=90)
