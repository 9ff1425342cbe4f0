"""An LLM-as-judge rule against a local fake OpenAI-compatible server (never the internet): it scores
the sampled share of real runs, gets through a judge 500 (the kernel's retries), and its own calls
are runs of their own (mode eval, `eval_run_id` naming the rule, `eval_case_id` the judged run) whose
cost is the evaluation cost GET /api/evaluators shows, never part of the agents' live figures. A
judge whose answer cannot be read is retried, then recorded as an evaluation error with its cost;
nothing crashes and the other rule goes on. A rule over live and eval runs never scores a judge's run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import duckdb
import httpx
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
from tests.support.fake_openai import FakeOpenAI, HttpErrorReply, TextReply, Usage
from tracer.pricing import cost_usd

RUNS = 30
RATE = 0.5
JUDGE_USAGE = Usage(prompt_tokens=1200, completion_tokens=40)
ONE_JUDGE_CALL = cost_usd("gpt-4o-mini", 1200, 40)
ONE_TONE_CALL = cost_usd("gpt-4.1-mini", 1200, 40)  # the other rule's judge model, priced as itself


def _rules(base_url: str) -> list[EvaluatorRule]:
    common = {"delay": "1s", "lookback": "1h"}
    return [
        EvaluatorRule.model_validate({
            "name": "helpfulness", "agent": "calc", "sample_rate": RATE, **common,
            "evaluator": {"kind": "judge", "model": "gpt-4o-mini", "base_url": base_url},
            "score": {"name": "helpfulness", "type": "numeric", "min": 1, "max": 5, "pass_at": 3},
        }),
        EvaluatorRule.model_validate({
            "name": "tone", "agent": "support", **common,
            "evaluator": {"kind": "judge", "model": "gpt-4.1-mini", "base_url": base_url, "attempts": 2,
                          "max_field_chars": 500},
            "score": {"name": "tone", "type": "categorical", "labels": ["polite", "rude"]},
        }),
        # a rule over live AND eval runs still never judges a judge's run (its judgments would pile up)
        EvaluatorRule.model_validate({
            "name": "every-mode", "modes": ["live", "eval"], **common, "evaluator": {"kind": "no_tool_error"},
            "score": {"name": "no_tool_error"},
        }),
    ]


def _runs(base: str, **params: Any) -> list[dict[str, Any]]:
    r = httpx.get(base + "/api/runs", params={"limit": 1000, **params}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["runs"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_judge_scores_the_sampled_runs_and_its_cost_is_evaluation_cost(
    start_ingest_server: Callable[..., Any], backend: str,
) -> None:
    with FakeOpenAI(default=TextReply('{"score": 4, "reason": "Correct sum, stated plainly."}',
                                      usage=JUDGE_USAGE)) as fake:
        fake.enqueue(HttpErrorReply(500), model="gpt-4o-mini")  # the first judge call fails once
        fake.always("gpt-4.1-mini", TextReply("The agent was polite, I would say.", usage=JUDGE_USAGE))
        srv = start_ingest_server(store=backend, grpc_port=0, evaluators=_rules(fake.base_url), evaluator_poll_interval_s=0.2)
        runs = [AgentRun([act("add", a=i, b=1), final(str(i + 1))], task=f"What is {i}+1?") for i in range(RUNS)]
        runs.append(AgentRun([final("Please hold. " + "x" * 5000)], task="Where is my parcel?", agent="support"))
        traces = run_agents(srv.http_url, runs)
        calc, support = set(traces[:RUNS]), traces[RUNS]

        expected = {t for t in calc if _sampled("helpfulness", "default", t)}

        def settled() -> dict[str, Any] | None:
            rules = evaluators_of(srv.http_url)
            h, t = rules["helpfulness"]["summary"], rules["tone"]["summary"]
            every = rules["every-mode"]["summary"]["evaluated"]
            return rules if t["errors"] == 1 and h["evaluated"] >= len(expected) and every >= len(traces) else None

        rules = wait_for(settled, timeout=240, every=0.5)
        time.sleep(1.0)  # five more polls: a run judged twice or out of the sample would show below
        rules = evaluators_of(srv.http_url)

    helpfulness = [s for s in scores_of(srv.http_url, name="helpfulness")]
    judged = {s["trace_id"] for s in helpfulness}
    assert judged == expected and len(helpfulness) == len(judged)  # the sampled runs, one score each
    # the sampling rate: about half of 30 (binomial, p=0.5: outside 6..24 with probability < 0.001)
    assert 6 <= len(judged) <= RUNS - 6, len(judged)
    for s in helpfulness:
        assert s["value"] == 4.0 and s["source"] == "judge" and s["comment"] == "Correct sum, stated plainly."
        assert s["author"] == "evaluator:helpfulness (gpt-4o-mini)"
    summary = rules["helpfulness"]["summary"]
    assert summary == {**summary, "evaluated": len(judged), "passed": len(judged), "failed": 0, "errors": 0}

    # the 500 was retried inside the judge run: one more request than judged runs, no error
    assert len([r for r in fake.requests if r["model"] == "gpt-4o-mini"]) == len(judged) + 1

    # what the judge was shown: the run's task, answer, steps and tool results, in the user message
    prompts = [r["messages"][-1]["content"] for r in fake.requests if r["model"] == "gpt-4o-mini"]
    for i in range(RUNS):
        if traces[i] in judged:
            [prompt] = {p for p in prompts if f"agent:\nWhat is {i}+1?\n" in p}
            assert f"answer:\n{i + 1}\n" in prompt and "1. add" in prompt and "2. finish" in prompt
            assert f'- add({{"a":{i},"b":1}}) -> {i + 1}' in prompt
    assert "Reply with one JSON object" in fake.requests[0]["messages"][0]["content"]
    # ... each part bounded: the support run's 5,000-character answer cut to max_field_chars
    [tone_prompt] = {r["messages"][-1]["content"] for r in fake.requests if r["model"] == "gpt-4.1-mini"}
    assert "more characters cut]" in tone_prompt and "x" * 501 not in tone_prompt

    # the judge's own runs: mode eval, named after the rule and the judged run, priced
    judge_runs = _runs(srv.http_url, eval_run_id="evaluator:helpfulness")
    assert len(judge_runs) == len(judged)
    assert {r["mode"] for r in judge_runs} == {"eval"} and {r["agent"] for r in judge_runs} == {"steplens-judge"}
    by_id = {r["trace_id"]: r for r in judge_runs}
    for s in helpfulness:
        judge = by_id[s["metadata"]["judge_trace_id"]]
        assert abs(judge["cost_usd"] - ONE_JUDGE_CALL) < 1e-12
        cases = _runs(srv.http_url, eval_case_id=s["trace_id"])
        assert [r["trace_id"] for r in cases] == [judge["trace_id"]]
    assert abs(summary["cost_usd"] - ONE_JUDGE_CALL * len(judged)) < 1e-9  # evaluation cost

    # ... and never in the live figures: live runs are the agents' 31, their cost the agents' own
    live = _runs(srv.http_url)
    assert {r["trace_id"] for r in live} == set(traces)
    assert all(r["agent"] != "steplens-judge" for r in live)

    # unreadable judge output: both attempts paid for, recorded as an error, no score
    tone = rules["tone"]
    assert tone["summary"]["evaluated"] == 0 and tone["summary"]["errors"] == 1
    [outcome] = tone["recent"]
    assert outcome["trace_id"] == support and outcome["status"] == "error"
    assert "unreadable after 2 attempt(s)" in outcome["reason"] and "not a JSON object" in outcome["reason"]
    assert len(outcome["judge_trace_ids"]) == 2
    assert abs(outcome["cost_usd"] - 2 * ONE_TONE_CALL) < 1e-12
    assert scores_of(srv.http_url, name="tone") == []
    assert {s["trace_id"] for s in scores_of(srv.http_url, name="no_tool_error")} == set(traces)


def _sampled(rule: str, project: str, trace_id: str) -> bool:
    """The documented sampling decision (design.md §4): a digest of rule, project and trace id under the rate."""
    [(digest,)] = duckdb.connect().execute(
        "SELECT md5_number(? || chr(31) || ? || chr(31) || ?) % 1000000", [rule, project, trace_id]).fetchall()
    return digest < RATE * 1_000_000
