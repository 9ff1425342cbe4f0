"""What an evaluation cannot do is recorded, never raised, and never stops the service:

- a judge endpoint that answers 500 to everything is tried by the kernel's retries inside each judge
  run, then again by the service with exponential backoff (`max_attempts` runs, each traced), then
  recorded as an error naming the provider's failure; the rule's outcome says how many attempts;
- a score the rule writes that breaks its `[[scores]]` config (here: declared categorical, written
  numeric) is refused by the scores' write path and recorded as an error with the refusal's reason,
  at once (trying again could not change it), while another rule of the same server scores normally.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ingest.evaluators.rules import EvaluatorRule
from ingest.scores.configs import ScoreConfig
from tests.ingest.evaluators.agent_runs import (
    AgentRun,
    act,
    evaluators_of,
    final,
    run_agents,
    scores_of,
    wait_for,
)
from tests.support.fake_openai import FakeOpenAI, HttpErrorReply


def test_failures_become_recorded_errors(start_ingest_server: Callable[..., Any]) -> None:
    common = {"delay": "1s", "lookback": "1h"}
    with FakeOpenAI() as fake:
        fake.always("gpt-4o-mini", HttpErrorReply(500))
        rules = [
            EvaluatorRule.model_validate({"name": "judge-down", **common, "max_attempts": 2,
                                          "evaluator": {"kind": "judge", "model": "gpt-4o-mini",
                                                        "base_url": fake.base_url},
                                          "score": {"name": "correct"}}),
            EvaluatorRule.model_validate({"name": "steps-numeric", **common,
                                          "evaluator": {"kind": "max_steps", "limit": 5},
                                          "score": {"name": "steps_ok", "type": "numeric"}}),
            EvaluatorRule.model_validate({"name": "fine", **common, "evaluator": {"kind": "no_tool_error"},
                                          "score": {"name": "no_tool_error"}}),
        ]
        srv = start_ingest_server(grpc_port=0, evaluators=rules, evaluator_poll_interval_s=0.2,
                                  scores=[ScoreConfig(name="steps_ok", data_type="categorical",  # type: ignore[arg-type]
                                                      categories=["ok", "too many"])])
        [trace] = run_agents(srv.http_url, [AgentRun([act("add", a=1, b=1), final("2")])])
        got = wait_for(lambda: (e := evaluators_of(srv.http_url)) and all(
            e[r]["summary"]["evaluated"] + e[r]["summary"]["errors"] == 1 for r in e) and e, timeout=120)

    down = got["judge-down"]
    assert down["summary"]["errors"] == 1 and down["summary"]["evaluated"] == 0
    [outcome] = down["recent"]
    assert outcome["status"] == "error" and outcome["attempts"] == 2 and outcome["trace_id"] == trace
    assert outcome["reason"].startswith("the judge model failed: server_error: all models failed after 3 attempt")
    assert len(outcome["judge_trace_ids"]) == 2  # each try was a judge run of its own
    # 2 service attempts x the kernel's 3 tries per judge run
    assert len(fake.requests) == 6

    [refused] = got["steps-numeric"]["recent"]
    assert refused["status"] == "error" and refused["attempts"] == 1
    assert "refused" in refused["reason"] and "categorical" in refused["reason"], refused["reason"]

    assert got["fine"]["summary"]["evaluated"] == 1 and got["fine"]["summary"]["passed"] == 1
    assert [s["name"] for s in scores_of(srv.http_url)] == ["no_tool_error"]
