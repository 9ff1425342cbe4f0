"""The Evaluators page (Streamlit AppTest against the real server with real evaluated runs) lists each
`[[evaluators]]` rule with what GET /api/evaluators counts (evaluated, passed, failed, errors, the
judge's evaluation cost) and, per rule, the latest outcomes linking to the judged run and the judge's
own run; without rules it says how to add one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ingest.evaluators.rules import EvaluatorRule
from tests.dashboards.conftest import open_page, shown, texts
from tests.ingest.evaluators.agent_runs import AgentRun, act, evaluators_of, final, run_agents, wait_for
from tests.support.fake_openai import FakeOpenAI, TextReply


def _rules(base_url: str) -> list[EvaluatorRule]:
    common = {"delay": "1s", "lookback": "1h"}
    return [
        EvaluatorRule.model_validate({"name": "no-tool-error", **common, "evaluator": {"kind": "no_tool_error"},
                                      "score": {"name": "no_tool_error"}}),
        EvaluatorRule.model_validate({"name": "correct", **common,
                                      "evaluator": {"kind": "judge", "model": "gpt-4o-mini", "base_url": base_url},
                                      "score": {"name": "correct"}}),
    ]


def test_page_shows_each_rules_counts_cost_and_links(start_ingest_server: Callable[..., Any], ui_env) -> None:
    with FakeOpenAI(default=TextReply('{"score": false, "reason": "wrong total"}')) as fake:
        srv = start_ingest_server(grpc_port=0, evaluators=_rules(fake.base_url), evaluator_poll_interval_s=0.2)
        ok, failed = run_agents(srv.http_url, [AgentRun([act("add", a=2, b=3), final("5")]),
                                               AgentRun([act("fail", x=1), final("no idea")])])
        wait_for(lambda: all(e["summary"]["evaluated"] == 2 for e in evaluators_of(srv.http_url).values()),
                 timeout=90)
    api = evaluators_of(srv.http_url)
    ui_env(srv.http_url)
    at = open_page("evaluators")
    assert not at.exception
    table = at.dataframe[0].value
    rows = {r["rule"]: r for r in table.to_dict("records")}
    assert rows["no-tool-error"]["evaluated"] == 2 and rows["no-tool-error"]["passed"] == 1
    assert rows["no-tool-error"]["failed"] == 1 and rows["no-tool-error"]["pass rate"] == "50%"
    assert rows["no-tool-error"]["evaluation cost"] == "—"
    assert rows["correct"]["passed"] == 0 and rows["correct"]["failed"] == 2
    cost = api["correct"]["summary"]["cost_usd"]
    assert cost > 0 and rows["correct"]["evaluation cost"] == f"${cost:.4f}"
    assert "never part of the agents' cost" in texts(at)

    outcomes = {shown(e.label).split(":")[0]: i for i, e in enumerate(at.expander)}
    assert set(outcomes) == {"no-tool-error", "correct"}
    judged = at.dataframe[1 + outcomes["correct"]].value
    assert set(judged["run"]) == {f"trace?trace_id={ok}", f"trace?trace_id={failed}"}
    judge_runs = {o["judge_trace_ids"][-1] for o in api["correct"]["recent"]}
    assert set(judged["judge run"]) == {f"trace?trace_id={t}" for t in judge_runs}
    assert set(judged["reason"]) == {"wrong total"}
    builtin = at.dataframe[1 + outcomes["no-tool-error"]].value
    assert dict(zip(builtin["run"], builtin["passed"], strict=True)) == {
        f"trace?trace_id={ok}": "yes", f"trace?trace_id={failed}": "no"}


def test_page_without_rules_says_how_to_add_one(start_ingest_server: Callable[..., Any], ui_env) -> None:
    srv = start_ingest_server(grpc_port=0)
    ui_env(srv.http_url)
    at = open_page("evaluators")
    assert not at.exception and "add [[evaluators]] to steplens.toml" in texts(at)
