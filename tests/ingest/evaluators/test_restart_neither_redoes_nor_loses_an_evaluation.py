"""Each evaluation is idempotent per (rule, run) across a server restart: what was judged before the
restart is not judged again (the judge is not paid twice, no second score), and runs that arrived
but were not yet scored when the server stopped are scored after it starts again.

The failure this covers: an in-memory "already done" set, which re-judged every run of the lookback
window on each restart (a second bill from the judge provider and a second score per run), or an
online cursor that had moved past runs still waiting out their delay, which were then never scored.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ingest.evaluators.rules import EvaluatorRule
from tests.ingest.api.harness import BACKENDS
from tests.ingest.evaluators.agent_runs import (
    AgentRun,
    act,
    evaluators_of,
    final,
    run_agents,
    scores_of,
    wait_for,
)
from tests.support.fake_openai import FakeOpenAI, TextReply


def _rules(base_url: str) -> list[EvaluatorRule]:
    common = {"delay": "2s", "lookback": "1h"}
    return [
        EvaluatorRule.model_validate({"name": "correct", **common,
                                      "evaluator": {"kind": "judge", "model": "gpt-4o-mini", "base_url": base_url},
                                      "score": {"name": "correct", "type": "boolean"}}),
        EvaluatorRule.model_validate({"name": "no-tool-error", **common, "evaluator": {"kind": "no_tool_error"},
                                      "score": {"name": "no_tool_error"}}),
    ]


def _run(i: int) -> AgentRun:
    return AgentRun([act("add", a=i, b=1), final(str(i + 1))], task=f"What is {i}+1?")


def _counts(base: str) -> dict[str, int]:
    rules = evaluators_of(base)
    return {name: rules[name]["summary"]["evaluated"] for name in ("correct", "no-tool-error")}


@pytest.mark.parametrize("backend", BACKENDS)
def test_restart_keeps_done_evaluations_and_scores_the_waiting_ones(
    server_on: Callable[..., Any], tmp_path: Path, backend: str,
) -> None:
    db = tmp_path / "steplens.duckdb"
    with FakeOpenAI(default=TextReply('{"score": true, "reason": "right"}')) as fake:
        first = server_on(db, evaluators=_rules(fake.base_url), evaluator_poll_interval_s=0.2)
        before = run_agents(first.http_url, [_run(i) for i in range(3)])
        wait_for(lambda: _counts(first.http_url) == {"correct": 3, "no-tool-error": 3}, timeout=90)
        scored_before = {s["score_id"]: s["created_at"] for s in scores_of(first.http_url)}
        assert len(scored_before) == 6 and len(fake.requests) == 3

        waiting = run_agents(first.http_url, [_run(i) for i in range(3, 5)])  # acknowledged, inside their delay
        first.stop()
        assert len(fake.requests) == 3, "the waiting runs were judged before their delay was up"

        second = server_on(db, evaluators=_rules(fake.base_url), evaluator_poll_interval_s=0.2)
        wait_for(lambda: _counts(second.http_url) == {"correct": 5, "no-tool-error": 5}, timeout=90)
        time.sleep(1.0)  # five more polls: a re-judgment would show up in the fake's requests
        scores = scores_of(second.http_url)

    assert len(fake.requests) == 5, "a run judged before the restart was judged again"
    assert len(scores) == 10 and {s["trace_id"] for s in scores} == set(before) | set(waiting)
    after = {s["score_id"]: s["created_at"] for s in scores}
    assert {k: after[k] for k in scored_before} == scored_before  # the earlier scores untouched
