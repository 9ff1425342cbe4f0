"""A dataset made from 20 stored production traces (`steplens dataset create`, the real console
script, against a real server) is the JSONL `steplens eval run` reads: each case has its run's
task, answer and tools. Run through `eval run --endpoint`, every case's verdict comes back from
GET /api/scores as an `eval_passed` score (source eval) on the eval run it produced, and a failed
run a reviewer corrected becomes a case expecting the correction, not the run's own path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
from rich.console import Console

from kernel.eval import load_dataset, load_run
from kernel.eval.cli import eval_run_command
from kernel.examples.demo import run_demo
from tests.support.scores_http import list_scores, post_scores, run_trace_ids
from tracer import conventions as c

STEPLENS = str(Path(sys.executable).with_name("steplens"))
CASES = 20


def _steplens(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STEPLENS, *args], capture_output=True, text=True, timeout=120)


def test_dataset_of_20_traces_runs_through_eval_and_its_results_are_scores(ingest_server, tmp_path: Path) -> None:
    url = ingest_server.http_url
    summary = run_demo(url, 90, seed=5, concurrency=16, progress=False, days=0)
    assert summary.export_complete, summary
    assert ingest_server.store.wait_loaded(30)
    ok_ticket = run_trace_ids(url, agent="ticket", ok="true")
    assert len(ok_ticket) >= CASES

    out = tmp_path / "from-traces.jsonl"
    made = _steplens("dataset", "create", "ticket-prod", "--filter", "agent=ticket", "--filter", "ok=true",
                     "--filter", f"limit={CASES}", "--forbidden-tool", "escalate_to_human", "--out", str(out),
                     "--api", url)
    assert made.returncode == 0, made.stdout + made.stderr
    assert f"{CASES} cases" in made.stdout
    cases = load_dataset(out)  # the harness's own reader accepts the file
    assert len(cases) == CASES
    listed = {r["trace_id"]: r for r in httpx.get(f"{url}/api/runs", params={"agent": "ticket", "ok": "true",
                                                                                 "limit": CASES}).json()["runs"]}
    assert {c.source["trace_id"] for c in cases} == set(listed)  # type: ignore[index]
    for case in cases:
        trace = httpx.get(f"{url}/api/traces/{case.source['trace_id']}").json()  # type: ignore[index]
        [root] = [s for s in trace["spans"] if s["span_id"] == trace["run"]["root_span_id"]]
        assert case.task == root["attributes"][c.RUN_TASK]
        assert case.expect.answer_contains == [root["attributes"][c.RUN_ANSWER].strip()]
        succeeded = [s["tool_name"] for s in trace["spans"] if s["operation"] == "tool" and s["status"] != "ERROR"]
        assert case.expect.tools_sequence == succeeded
        assert case.expect.forbidden_tools == ["escalate_to_human"] and case.category == "ticket"

    assert sum(bool(c.expect.tools_sequence) for c in cases) > CASES // 2  # most answers needed a tool

    results = tmp_path / "evals"
    code = eval_run_command(out, "ticket", "v1", url, seed=2, out_dir=results, console=Console(width=200, record=True))
    assert code == 0
    [path] = results.glob("*.json")
    run = load_run(path)
    assert run.scores_posted == CASES and run.scores_error is None
    assert ingest_server.store.wait_loaded(30)
    scores = list_scores(url, name="eval_passed", source="eval")
    assert len(scores) == CASES
    by_trace = {s["trace_id"]: s for s in scores}
    for case in run.cases:
        score = by_trace[case.trace_id]
        assert score["value"] is case.passed and score["data_type"] == "boolean"
        assert score["mode"] == "eval" and score["agent"] == "ticket"  # joined from the eval's own run
        assert score["metadata"]["eval_run_id"] == run.run_id and score["metadata"]["case_id"] == case.case_id
        assert (score["comment"] or "") == "; ".join(case.failures)
    assert not set(by_trace) & set(listed)  # the verdicts are on the eval's runs, not the production ones


def test_a_failed_run_with_a_reviewers_correction_expects_the_correction(ingest_server, tmp_path: Path) -> None:
    url = ingest_server.http_url
    assert run_demo(url, 60, seed=9, concurrency=16, progress=False, days=0).export_complete
    assert ingest_server.store.wait_loaded(30)
    failed = run_trace_ids(url, ok="false")
    fine = run_trace_ids(url, ok="true")
    assert failed and fine
    post_scores(url, [{"trace_id": failed[0], "name": "correction", "value": "wrong", "source": "human",
                       "comment": "Order A1003 was delivered on Monday."}], ingest_server.store)
    body = {"name": "corrected", "trace_ids": [failed[0], fine[0], *failed[1:2], "0" * 32]}
    r = httpx.post(f"{url}/api/datasets", json=body, timeout=60)
    assert r.status_code == 200, r.text
    saved = r.json()
    assert saved["cases"] == 2
    reasons = {s["trace_id"]: s["reason"] for s in saved["skipped"]}
    assert "no run with this trace id" in reasons["0" * 32]
    if len(failed) > 1:
        assert "no reviewer's correction" in reasons[failed[1]]
    lines = httpx.get(f"{url}/api/datasets/corrected", timeout=30).text.splitlines()
    first, second = (json.loads(line) for line in lines)
    assert first["source"] == {**first["source"], "trace_id": failed[0], "expected_from": "correction"}
    assert first["expect"]["answer_contains"] == ["Order A1003 was delivered on Monday."]
    assert "tools_sequence" not in first["expect"]  # the corrected run's path is not the expectation
    assert second["source"]["trace_id"] == fine[0] and second["source"]["expected_from"] == "answer"
    again = httpx.post(f"{url}/api/datasets", json=body, timeout=60)
    assert again.status_code == 409
    assert httpx.post(f"{url}/api/datasets", json={**body, "replace": True}, timeout=60).status_code == 200
    assert httpx.get(f"{url}/api/datasets/nothing-here", timeout=30).status_code == 404
    assert httpx.post(f"{url}/api/datasets", json={"name": "x"}, timeout=30).status_code == 422
