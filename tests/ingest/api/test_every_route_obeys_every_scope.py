"""Every route of the real server, called with every kind of key: only `operator` crosses projects.

The failure this covers: an `admin` key of project A read project B's runs, traces, failures, tools,
cost, diff, regressions and alert rules, and approved B's pending approvals, while the README said a
key only ever reads its own project; `/metrics` (every project's counts) answered any read key.

The routes are taken from the server's own OpenAPI document, so a route added later without an
entry in ROUTES fails here until somebody decides who may call it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest

from ingest.alerts.rules import AlertRule
from ingest.config import ApiKey
from ingest.evaluators.rules import EvaluatorRule
from tests.ingest.api.harness import BACKENDS, not_ported
from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # scopes hold on each store, 501 routes included

KEYS = {
    "ingest_a": ("A", ["ingest"]),
    "read_a": ("A", ["read"]),
    "admin_a": ("A", ["admin"]),
    "ingest_b": ("B", ["ingest"]),
    "admin_b": ("B", ["admin"]),
    "operator": ("ops", ["operator"]),
}
SECRET = {name: f"{name}-secret-0123456789" for name in KEYS}
B_AGENT = "agent_of_project_b"  # must never appear in an answer to a key of A
WINDOW = {"since": (T0 - timedelta(days=1)).isoformat(), "until": (T0 + timedelta(days=1)).isoformat()}


def _rules() -> list[AlertRule]:
    common = {"kind": "threshold", "metric": "steps", "threshold": 1.0, "min_samples": 2,
              "window": timedelta(days=3650), "interval": timedelta(hours=1)}
    return [AlertRule(name="rule-of-a", project="A", **common), AlertRule(name="rule-of-b", project="B", **common),
            AlertRule(name="rule-of-everyone", **common)]


def _evaluators() -> list[EvaluatorRule]:
    """Rules of A and of B that never find a run to score (a delay of ten years): only their visibility counts."""
    return [EvaluatorRule.model_validate({"name": f"evaluator-of-{p.lower()}", "project": p, "delay": "3650d",
                                          "evaluator": {"kind": "no_tool_error"}, "score": {"name": "no_tool_error"}})
            for p in ("A", "B")]


@pytest.fixture
def world(start_ingest_server: Callable[..., Any]) -> dict[str, Any]:
    srv = start_ingest_server(
        grpc_port=0, alerts=_rules(), evaluators=_evaluators(),
        api_keys=[ApiKey(key=SECRET[n], project=p, scopes=s) for n, (p, s) in KEYS.items()],  # type: ignore[arg-type]
    )
    base = srv.http_url
    ids: dict[str, Any] = {}

    def ported(segment: str) -> bool:
        return not not_ported(srv.store, segment)

    for project, agent in (("A", "agent_of_project_a"), ("B", B_AGENT)):
        emitter = Emitter()
        runs = [emitter.run(RunSpec(agent=agent, start=T0 + timedelta(minutes=i), failing_tools=1, ok=i % 2 == 0,
                                    stop_reason="finish" if i % 2 == 0 else "tool_error_exhausted",
                                    conversation=f"conversation-of-{project.lower()}"))
                for i in range(4)]
        r = httpx.post(base + "/v1/traces", content=emitter.request().SerializeToString(),
                       headers={"content-type": "application/x-protobuf", "x-api-key": SECRET[f"ingest_{project.lower()}"]})
        assert r.status_code == 200, r.text
        ids[project] = {"traces": [run.trace_id for run in runs], "approval": "no-approval", "view": "no-view",
                        "backfill": "no-job"}
        if ported("approvals"):
            approval = httpx.post(base + "/api/approvals", headers={"x-api-key": SECRET[f"ingest_{project.lower()}"]},
                                  json={"tool": f"refund_{project}", "arguments": {"amount": 1}})
            assert approval.status_code == 201, approval.text
            ids[project]["approval"] = approval.json()["approval_id"]
        key = SECRET[f"admin_{project.lower()}"]
        score = httpx.post(base + "/api/scores", headers={"x-api-key": key},
                           json={"name": f"score_of_project_{project.lower()}", "value": 1, "trace_id": runs[0].trace_id})
        assert score.status_code == 200, score.text
        if ported("score-configs"):
            config = httpx.post(base + "/api/score-configs", headers={"x-api-key": key},
                                json={"name": f"config_of_project_{project.lower()}", "data_type": "numeric"})
            assert config.status_code == 200, config.text
        if ported("datasets"):
            dataset = httpx.post(base + "/api/datasets", headers={"x-api-key": key},
                                 json={"name": f"dataset_of_project_{project.lower()}", "trace_ids": [runs[0].trace_id]})
            assert dataset.status_code == 200, dataset.text
        if ported("views"):
            view = httpx.post(base + "/api/views", headers={"x-api-key": key},
                              json={"name": f"view of {project}", "page": "runs", "filter": f"agent = {agent}"})
            assert view.status_code == 201, view.text
            ids[project]["view"] = view.json()["view_id"]
        if ported("evaluators"):
            job = httpx.post(base + f"/api/evaluators/evaluator-of-{project.lower()}/backfill",
                             headers={"x-api-key": key})
            assert job.status_code == 202, job.text
            ids[project]["backfill"] = job.json()["job_id"]
    assert srv.store.wait_loaded(30)
    for project in ("A", "B"):  # each project's runs in its own queue (by backfill: they are stored)
        if not ported("queues"):
            break
        key, name = SECRET[f"admin_{project.lower()}"], f"queue_of_project_{project.lower()}"
        queue = httpx.post(base + "/api/queues", headers={"x-api-key": key},
                           json={"name": name, "score_configs": [f"config_of_project_{project.lower()}"]})
        assert queue.status_code == 201, queue.text
        backfill = httpx.post(base + f"/api/queues/{name}/backfill", headers={"x-api-key": key},
                              json={"since": (T0 - timedelta(days=1)).isoformat()})
        assert backfill.status_code == 200 and backfill.json()["added"] == 4, backfill.text
    return {"base": base, "ids": ids, "srv": srv}


def _call(world: dict[str, Any], method: str, path: str, key: str | None, **kw: Any) -> httpx.Response:
    headers = {**kw.pop("headers", {}), **({"x-api-key": SECRET[key]} if key else {})}
    return httpx.request(method, world["base"] + path, headers=headers, timeout=30, **kw)


def _b_markers(world: dict[str, Any]) -> list[str]:
    b = world["ids"]["B"]
    return [B_AGENT, "rule-of-b", "rule-of-everyone", "refund_B", b["approval"], b["view"], "conversation-of-b",
            "view of B", *b["traces"], "score_of_project_b", "config_of_project_b", "queue_of_project_b",
            "dataset_of_project_b", "evaluator-of-b", b["backfill"]]


# (method, path template) -> (scope needed, how to call it for project A's key, for B's id)
def _routes(world: dict[str, Any]) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    a, b = world["ids"]["A"], world["ids"]["B"]
    return {
        ("get", "/api/runs"): ("read", {"params": {**WINDOW, "limit": 100}}),
        ("get", "/api/traces/{trace_id}"): ("read", {"path": {"trace_id": b["traces"][0]}}),
        ("get", "/api/overview"): ("read", {"params": WINDOW}),
        ("get", "/api/budget-advice"): ("read", {"params": {**WINDOW, "max_steps": 3}}),
        ("get", "/api/failures"): ("read", {"params": WINDOW}),
        ("get", "/api/tools"): ("read", {"params": WINDOW}),
        ("get", "/api/models"): ("read", {"params": WINDOW}),
        ("get", "/api/cost"): ("read", {"params": {**WINDOW, "group_by": "agent"}}),
        ("get", "/api/diff"): ("read", {"params": {"a": a["traces"][0], "b": b["traces"][0]}}),
        ("get", "/api/prices"): ("read", {}),
        ("get", "/api/replanning"): ("read", {"params": WINDOW}),
        ("get", "/api/regressions"): ("read", {"params": WINDOW}),
        ("get", "/api/alerts"): ("read", {}),
        ("get", "/api/alerts/events"): ("read", {}),
        ("post", "/api/alerts/check"): ("admin", {}),
        ("get", "/api/approvals"): ("read", {"params": {"status": "pending"}}),
        ("post", "/api/approvals"): ("ingest", {"json": {"tool": "lookup"}}),
        ("get", "/api/approvals/{approval_id}"): ("read|ingest", {"path": {"approval_id": b["approval"]}}),
        ("post", "/api/approvals/{approval_id}/approve"): ("admin", {"path": {"approval_id": b["approval"]}}),
        ("post", "/api/approvals/{approval_id}/reject"): ("admin", {"path": {"approval_id": b["approval"]}}),
        ("post", "/api/approvals/{approval_id}/expire"): ("ingest", {"path": {"approval_id": b["approval"]}}),
        ("get", "/api/spans"): ("read", {"params": {**WINDOW, "limit": 500, "filter": 'status = "ERROR"'}}),
        ("get", "/api/search"): ("read", {"params": {**WINDOW, "q": "timed out", "limit": 100}}),
        ("get", "/api/search/status"): ("read", {}),
        ("post", "/api/search/reindex"): ("operator", {}),
        ("get", "/api/export"): ("read", {"params": {"table": "spans", "format": "jsonl"}}),
        ("post", "/api/sql"): ("read", {"json": {"sql": "SELECT agent, trace_id FROM runs UNION ALL "
                                                "SELECT agent_name, trace_id FROM spans"}}),
        ("get", "/api/sql/views"): ("read", {}),
        ("get", "/api/sessions"): ("read", {"params": WINDOW}),
        ("get", "/api/sessions/{session_id}"): ("read", {"path": {"session_id": "conversation-of-b"}}),
        ("get", "/api/graph"): ("read", {"params": WINDOW}),
        ("get", "/api/traces/{trace_id}/graph"): ("read", {"path": {"trace_id": b["traces"][0]}}),
        ("get", "/api/views"): ("read", {}),
        ("post", "/api/views"): ("read", {"json": {"name": "a view", "page": "runs"}}),
        ("get", "/api/views/{view_id}"): ("read", {"path": {"view_id": b["view"]}}),
        ("put", "/api/views/{view_id}"): ("read", {"path": {"view_id": b["view"]}, "json": {"name": "x", "page": "runs"}}),
        ("delete", "/api/views/{view_id}"): ("read", {"path": {"view_id": b["view"]}}),
        ("get", "/metrics"): ("operator", {}),
        ("get", "/readyz"): ("any", {}),
        ("get", "/healthz"): ("open", {}),
        ("post", "/v1/traces"): ("ingest", {"content": b"", "headers": {"content-type": "application/x-protobuf"}}),
        ("post", "/v1/logs"): ("ingest", {"content": b"", "headers": {"content-type": "application/x-protobuf"}}),
        ("post", "/api/scores"): ("annotate", {"json": {"name": "helpful", "value": True, "trace_id": a["traces"][0]}}),
        ("get", "/api/scores"): ("read", {"params": {"limit": 100}}),
        ("get", "/api/score-configs"): ("read", {}),
        ("post", "/api/score-configs"): ("admin", {"json": {"name": "helpful", "data_type": "boolean"}}),
        ("get", "/api/queues"): ("read", {}),
        ("post", "/api/queues"): ("admin", {"json": {"name": "new_queue", "score_configs": ["config_of_project_a"]}}),
        ("get", "/api/queues/{name}"): ("read", {"path": {"name": "queue_of_project_b"}}),
        ("put", "/api/queues/{name}"): ("admin", {"path": {"name": "queue_of_project_b"}, "json": {
            "name": "queue_of_project_b", "score_configs": ["config_of_project_a"]}}),
        ("get", "/api/queues/{name}/items"): ("read", {"path": {"name": "queue_of_project_b"}}),
        ("get", "/api/queues/{name}/next"): ("annotate", {"path": {"name": "queue_of_project_b"},
                                                          "params": {"user": "someone"}}),
        ("post", "/api/queues/{name}/items/{trace_id}/submit"): ("annotate", {
            "path": {"name": "queue_of_project_b", "trace_id": b["traces"][0]},
            "json": {"user": "someone", "scores": {"config_of_project_b": 1}}}),
        ("post", "/api/queues/{name}/items/{trace_id}/skip"): ("annotate", {
            "path": {"name": "queue_of_project_b", "trace_id": b["traces"][1]}, "json": {"user": "someone"}}),
        ("get", "/api/queues/{name}/results"): ("read", {"path": {"name": "queue_of_project_b"}}),
        ("post", "/api/queues/{name}/backfill"): ("admin", {"path": {"name": "queue_of_project_b"},
                                                            "json": {"since": WINDOW["since"]}}),
        ("delete", "/api/queues/{name}"): ("admin", {"path": {"name": "queue_of_project_b"}}),
        ("post", "/api/datasets"): ("annotate", {"json": {"name": "cases", "filter": {**WINDOW, "limit": 100},
                                                          "replace": True}}),
        ("get", "/api/datasets"): ("read", {}),
        ("get", "/api/datasets/{name}"): ("read", {"path": {"name": "dataset_of_project_b"}}),
        ("get", "/api/evaluators"): ("read", {}),
        ("post", "/api/evaluators/{rule}/backfill"): ("admin", {"path": {"rule": "evaluator-of-b"}}),
        ("get", "/api/evaluators/backfill/{job_id}"): ("admin", {"path": {"job_id": b["backfill"]}}),
    }


def _segment(template: str) -> str:
    """The first path segment under /api ("" for the routes outside it)."""
    parts = template.split("/")
    return parts[2] if len(parts) > 2 and parts[1] == "api" else ""


def _allowed(scope: str, key: str) -> bool:
    held = set(KEYS[key][1])
    implied = {"admin": {"ingest", "read", "admin", "annotate"},
               "operator": {"ingest", "read", "admin", "operator", "annotate"}}
    for s in list(held):
        held |= implied.get(s, set())
    if scope in ("any", "open"):
        return True
    return any(s in held for s in scope.split("|"))


def test_every_route_is_classified(world: dict[str, Any]) -> None:
    spec = _call(world, "GET", "/openapi.json", "operator").json()
    served = {(method, path) for path, ops in spec["paths"].items() for method in ops}
    assert served - set(_routes(world)) == set(), "a new route: decide its scope in ROUTES above"


@pytest.mark.parametrize("key", [None, *KEYS])
def test_each_key_gets_its_scope_and_never_another_projects_data(world: dict[str, Any], key: str | None) -> None:
    markers = _b_markers(world)
    for (method, template), (scope, how) in _routes(world).items():
        path = template.format(**how.get("path", {}))
        kw = {k: v for k, v in how.items() if k != "path"}
        r = _call(world, method.upper(), path, key, **kw)
        where = f"{method.upper()} {path} with {key}"
        if scope == "open":
            assert r.status_code == 200, where
            continue
        if key is None:
            assert r.status_code == 401, where
            continue
        if not_ported(world["srv"].store, _segment(template)):  # not on this store yet: nothing of B leaks
            if KEYS[key][0] == "A":
                assert not [m for m in markers if m in r.text], where
            continue
        if not _allowed(scope, key):
            assert r.status_code == 403, f"{where}: {r.status_code} {r.text[:200]}"
            continue
        if r.status_code == 501 and world["srv"].store.name == "clickhouse":  # a query not ported yet
            assert "not available on the clickhouse store yet" in r.text, where
            continue
        assert r.status_code < 500, f"{where}: {r.status_code} {r.text[:300]}"
        if KEYS[key][0] == "A":
            # a 404 may repeat the id the caller sent
            asked = {*how.get("path", {}).values(), *map(str, how.get("params", {}).values())}
            leaked = [m for m in markers if m in r.text and m not in asked]
            assert not leaked, f"{where} answered project B's {leaked}"
            if "{" in template or template == "/api/diff":  # B's trace / approval / view by id: as if absent
                assert r.status_code == 404, f"{where}: {r.status_code}"
    if key is not None and KEYS[key][0] == "A" and not not_ported(world["srv"].store, "approvals"):
        # approve/reject/expire above all went to B's approval
        b_approval = _call(world, "GET", f"/api/approvals/{world['ids']['B']['approval']}", "admin_b").json()
        assert b_approval["status"] == "pending"
    if key is not None and KEYS[key][0] == "A" and not not_ported(world["srv"].store, "views"):
        b_view = _call(world, "GET", f"/api/views/{world['ids']['B']['view']}", "admin_b")
        assert b_view.status_code == 200 and b_view.json()["name"] == "view of B"  # A's PUT/DELETE changed nothing


def test_operator_sees_every_project_and_admin_only_its_own(world: dict[str, Any]) -> None:
    def agents(key: str) -> set[str]:
        rows = _call(world, "GET", "/api/runs", key, params={**WINDOW, "limit": 100}).json()["runs"]
        return {row["agent"] for row in rows}

    assert agents("operator") == {"agent_of_project_a", B_AGENT}
    assert agents("admin_a") == agents("read_a") == {"agent_of_project_a"}
    store = world["srv"].store
    assert "steplens_spans_stored" in _call(world, "GET", "/metrics", "operator").text
    names = {s["name"] for s in _call(world, "GET", "/api/scores", "operator").json()["scores"]}
    assert {"score_of_project_a", "score_of_project_b"} <= names
    assert {s["name"] for s in _call(world, "GET", "/api/scores", "read_a").json()["scores"]} <= {
        "score_of_project_a", "helpful"}
    if not_ported(store, "alerts") or not_ported(store, "approvals"):
        return
    rules = {r["rule"]["name"] for r in _call(world, "GET", "/api/alerts", "operator").json()["rules"]}
    assert rules == {"rule-of-a", "rule-of-b", "rule-of-everyone"}
    rules_a = {r["rule"]["name"] for r in _call(world, "GET", "/api/alerts", "admin_a").json()["rules"]}
    assert rules_a == {"rule-of-a"}
    checked = _call(world, "POST", "/api/alerts/check", "admin_a").json()
    assert checked["evaluated"] == 1 and {f["rule"] for f in checked["firing"]} <= {"rule-of-a"}
    assert _call(world, "POST", "/api/alerts/check", "operator").json()["evaluated"] == 3
    a_approval = world["ids"]["A"]["approval"]
    assert _call(world, "POST", f"/api/approvals/{a_approval}/approve", "admin_b").status_code == 404
    decided = _call(world, "POST", f"/api/approvals/{a_approval}/approve", "admin_a")
    assert decided.status_code == 200 and decided.json()["status"] == "approved"
