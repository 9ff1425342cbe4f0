"""A rule that names no project scores every project's runs, each in its own project: GET
/api/evaluators with a key of A counts and lists A's evaluations only (never a trace id of B), a key
of B the same for B, an operator both; a rule naming project B is invisible to A; and the judge's
own run of a B run is stored in B (exported with B's key), so A never sees what was said about B.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ingest.config import ApiKey
from ingest.evaluators.rules import EvaluatorRule
from tests.ingest.api.harness import BACKENDS
from tests.ingest.evaluators.agent_runs import AgentRun, act, evaluators_of, final, run_agents, wait_for
from tests.support.fake_openai import FakeOpenAI, TextReply

KEYS = {"ingest_a": ("A", ["ingest"]), "read_a": ("A", ["read"]), "ingest_b": ("B", ["ingest"]),
        "read_b": ("B", ["read"]), "operator": ("ops", ["operator"])}
SECRET = {name: f"{name}-secret-0123456789" for name in KEYS}


def _rules(base_url: str) -> list[EvaluatorRule]:
    common = {"delay": "1s", "lookback": "1h"}
    return [
        EvaluatorRule.model_validate({"name": "everyones-judge", **common,
                                      "evaluator": {"kind": "judge", "model": "gpt-4o-mini", "base_url": base_url},
                                      "score": {"name": "correct"}}),
        EvaluatorRule.model_validate({"name": "b-only", "project": "B", **common,
                                      "evaluator": {"kind": "no_tool_error"}, "score": {"name": "no_tool_error"}}),
    ]


def _run(i: int) -> AgentRun:
    return AgentRun([act("add", a=i, b=1), final(str(i + 1))], task=f"What is {i}+1?")


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_key_sees_its_projects_evaluations_only(start_ingest_server: Callable[..., Any], backend: str) -> None:
    with FakeOpenAI(default=TextReply('{"score": true, "reason": "right"}')) as fake:
        srv = start_ingest_server(
            store=backend, grpc_port=0, evaluators=_rules(fake.base_url), evaluator_poll_interval_s=0.2,
            api_keys=[ApiKey(key=SECRET[n], project=p, scopes=s) for n, (p, s) in KEYS.items()],  # type: ignore[arg-type]
        )
        traces = {"A": run_agents(srv.http_url, [_run(i) for i in range(2)], api_key=SECRET["ingest_a"]),
                  "B": run_agents(srv.http_url, [_run(i) for i in range(3)], api_key=SECRET["ingest_b"])}

        def all_done() -> bool:
            rules = evaluators_of(srv.http_url, key=SECRET["operator"])
            return (rules["everyones-judge"]["summary"]["evaluated"] == 5
                    and rules["b-only"]["summary"]["evaluated"] == 3)

        wait_for(all_done, timeout=120)

    for project, other in (("A", "B"), ("B", "A")):
        key = SECRET[f"read_{project.lower()}"]
        r = httpx.get(srv.http_url + "/api/evaluators", headers={"x-api-key": key}, timeout=30)
        assert r.status_code == 200
        assert not [t for t in traces[other] if t in r.text], f"a key of {project} saw {other}'s runs"
        rules = {e["rule"]["name"]: e for e in r.json()["evaluators"]}
        judge = rules["everyones-judge"]
        assert judge["summary"]["evaluated"] == len(traces[project])
        assert {o["trace_id"] for o in judge["recent"]} == set(traces[project])
        assert {o["project"] for o in judge["recent"]} == {project}
        if project == "A":
            assert "b-only" not in rules
        else:
            assert rules["b-only"]["summary"]["evaluated"] == 3
        # the judge's runs of this project's runs are stored in this project, none of the other's
        runs = httpx.get(srv.http_url + "/api/runs", params={"eval_run_id": "evaluator:everyones-judge"},
                         headers={"x-api-key": key}, timeout=30).json()["runs"]
        assert len(runs) == len(traces[project]) and {r["project"] for r in runs} == {project}
        for trace_id in traces[project]:  # one judge run per judged run, found by the judged run's id
            cases = httpx.get(srv.http_url + "/api/runs", params={"eval_case_id": trace_id},
                              headers={"x-api-key": key}, timeout=30).json()["runs"]
            assert [c["project"] for c in cases] == [project]
    # asking for the other project narrows to nothing, never widens
    r = httpx.get(srv.http_url + "/api/evaluators", params={"project": "B"}, headers={"x-api-key": SECRET["read_a"]},
                  timeout=30)
    assert r.status_code == 200 and all(e["summary"]["evaluated"] == 0 and not e["recent"]
                                        for e in r.json()["evaluators"])
