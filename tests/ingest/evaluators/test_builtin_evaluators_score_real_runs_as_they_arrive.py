"""Every built-in evaluator, configured as `[[evaluators]]` rules, scores real kernel runs that arrive
at a real server over OTLP, unasked: the scores (value, reason, source `rule`) are on GET /api/scores
and the counts on GET /api/evaluators.

The failure this covers: a rule that looked at the wrong span (the step instead of the run span for
the answer, the LLM call instead of the tool for errors) scoring every run the same way; so each run
here passes some rules and fails others, and every expected value is asserted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ingest.evaluators.rules import EvaluatorRule
from tests.ingest.api.harness import BACKENDS
from tests.ingest.evaluators.agent_runs import (
    AgentRun,
    act,
    evaluators_of,
    final,
    json_answer,
    run_agents,
    scores_of,
    wait_for,
)

FAST = {"delay": "1s", "lookback": "1h"}


def _rule(name: str, evaluator: dict[str, Any], score_type: str = "boolean") -> EvaluatorRule:
    return EvaluatorRule.model_validate({"name": name, **FAST, "evaluator": evaluator,
                                         "score": {"name": name.replace("-", "_"), "type": score_type}})


RULES = [
    _rule("mentions-five", {"kind": "contains", "text": ["5"]}),
    _rule("answer-is-a-number", {"kind": "regex", "pattern": r"^\d+$"}),
    _rule("answer-json", {"kind": "json_schema", "schema": {"type": "object", "required": ["total"],
                                                            "properties": {"total": {"type": "integer"}}}}),
    _rule("looks-up-then-adds", {"kind": "tool_sequence", "tools": ["lookup", "add"]}),
    _rule("never-refunds", {"kind": "forbidden_tools", "tools": ["refund"]}),
    _rule("at-most-two-steps", {"kind": "max_steps", "limit": 2}, "numeric"),
    _rule("cheap", {"kind": "max_cost", "limit_usd": 1.0}),
    _rule("fast", {"kind": "max_latency", "limit_s": 60}),
    _rule("no-tool-error", {"kind": "no_tool_error"}),
]

RUNS = {
    # 2 steps: add, then the answer "5"
    "plain": AgentRun([act("add", a=2, b=3), final("5")]),
    # 3 steps: lookup, add, a JSON answer
    "json": AgentRun([act("lookup", order="A1"), act("add", a=1, b=1), json_answer({"total": 2})],
                     task="Total of order A1?"),
    # 3 steps: a failing tool, a refund, then prose
    "bad": AgentRun([act("fail", x=1), act("refund", order="A1"), final("Refunded, sorry for the trouble.")],
                    task="Fix order A1"),
}

EXPECTED = {  # score name -> run -> value
    "mentions_five": {"plain": True, "json": False, "bad": False},
    "answer_is_a_number": {"plain": True, "json": False, "bad": False},
    "answer_json": {"plain": False, "json": True, "bad": False},
    "looks_up_then_adds": {"plain": False, "json": True, "bad": False},
    "never_refunds": {"plain": True, "json": True, "bad": False},
    "at_most_two_steps": {"plain": 1.0, "json": 0.0, "bad": 0.0},
    "cheap": {"plain": True, "json": True, "bad": True},
    "fast": {"plain": True, "json": True, "bad": True},
    "no_tool_error": {"plain": True, "json": True, "bad": False},
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_builtin_scores_each_run_by_what_it_did(start_ingest_server: Callable[..., Any], backend: str) -> None:
    srv = start_ingest_server(store=backend, grpc_port=0, evaluators=RULES, evaluator_poll_interval_s=0.2)
    traces = dict(zip(RUNS, run_agents(srv.http_url, list(RUNS.values())), strict=True))
    by_trace = {t: name for name, t in traces.items()}
    expected_count = len(RULES) * len(RUNS)

    scores = wait_for(lambda: (s := scores_of(srv.http_url)) and len(s) >= expected_count and s, timeout=90)
    assert len(scores) == expected_count  # one score per (rule, run): nothing twice
    got = {(s["name"], by_trace[s["trace_id"]]): s for s in scores}
    for name, per_run in EXPECTED.items():
        for run, value in per_run.items():
            score = got[(name, run)]
            assert score["value"] == value, f"{name} on {run}: {score['value']!r} ({score['comment']})"
            assert score["source"] == "rule" and score["author"] == f"evaluator:{name.replace('_', '-')}"
            assert score["comment"], f"{name} on {run} has no reason"
            assert score["agent"] == "calc"
    # the reasons say what was found
    assert "'5'" in got[("mentions_five", "json")]["comment"]
    assert "refund" in got[("never_refunds", "bad")]["comment"]
    assert "fail" in got[("no_tool_error", "bad")]["comment"]
    assert "3 steps" in got[("at_most_two_steps", "bad")]["comment"]

    rules = evaluators_of(srv.http_url)
    assert set(rules) == {r.name for r in RULES}
    for rule in RULES:
        summary = rules[rule.name]["summary"]
        values = EXPECTED[rule.score.name].values()
        assert summary["evaluated"] == 3 and summary["errors"] == 0, (rule.name, summary)
        assert summary["passed"] == sum(1 for v in values if v is True or v == 1.0), (rule.name, summary)
        assert summary["failed"] == 3 - summary["passed"]
        assert summary["cost_usd"] == 0  # no judge, no evaluation cost
        assert {o["trace_id"] for o in rules[rule.name]["recent"]} == set(traces.values())
