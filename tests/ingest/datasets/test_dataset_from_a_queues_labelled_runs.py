"""A dataset made of an annotation queue's labelled runs: the runs people labelled (not the skipped
ones) become cases, and a reviewer's comment on their label is the expected answer (the label
score named by `correction_score`); a queue the project does not have is a 404."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from kernel.examples.demo import run_demo
from tests.ingest.api.harness import BACKENDS
from tests.ingest.queues.harness import CONFIGS, FILL_INTERVAL_S, Api, settle

CORRECTION = "The order A1003 was delivered on Monday; no refund is due."


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_queues_labelled_runs_become_cases_with_the_reviewers_correction(
    start_ingest_server: Callable[..., Any], tmp_path: Path, backend: str,
) -> None:
    srv = start_ingest_server(store=backend, grpc_port=0, scores=CONFIGS, queue_fill_interval_s=FILL_INTERVAL_S)
    api = Api(srv.http_url)
    api.create("review")
    assert run_demo(srv.http_url, 12, seed=3, concurrency=4, progress=False, days=0).export_complete
    assert settle(api, "review", srv.store) == 12

    wrong = api.ok("GET", "/api/queues/review/next", params={"user": "alice"})["item"]["trace_id"]
    api.ok("POST", f"/api/queues/review/items/{wrong}/submit",
           json={"user": "alice", "scores": {"correct": False}, "comment": CORRECTION})
    right = api.ok("GET", "/api/queues/review/next", params={"user": "alice"})["item"]["trace_id"]
    api.ok("POST", f"/api/queues/review/items/{right}/submit", json={"user": "alice", "scores": {"correct": True}})
    passed = api.ok("GET", "/api/queues/review/next", params={"user": "alice"})["item"]["trace_id"]
    api.ok("POST", f"/api/queues/review/items/{passed}/skip", json={"user": "alice"})
    assert srv.store.wait_loaded(30)

    r = httpx.post(srv.http_url + "/api/datasets", timeout=60,
                   json={"name": "reviewed", "queue": "review", "correction_score": "correct"})
    assert r.status_code == 200, r.text
    saved = r.json()
    right_run = httpx.get(f"{srv.http_url}/api/traces/{right}", timeout=30).json()["run"]
    assert saved["cases"] + len(saved["skipped"]) == 2  # the skipped item is not selected at all
    if not right_run["ok"]:  # a failed run labelled right without a comment cannot say what is expected
        assert [s["trace_id"] for s in saved["skipped"]] == [right]
    lines = httpx.get(srv.http_url + "/api/datasets/reviewed", timeout=30).text.splitlines()
    cases = {c["source"]["trace_id"]: c for c in map(json.loads, lines)}
    assert passed not in cases
    assert cases[wrong]["expect"]["answer_contains"] == [CORRECTION]
    assert cases[wrong]["source"]["expected_from"] == "correction"
    if right_run["ok"]:
        assert cases[right]["source"]["expected_from"] == "answer"

    out = tmp_path / "reviewed.jsonl"  # the same through the console script
    made = subprocess.run([str(Path(sys.executable).with_name("steplens")), "dataset", "create", "reviewed-cli",
                           "--queue", "review", "--correction-score", "correct", "--out", str(out),
                           "--api", srv.http_url], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stdout + made.stderr
    assert out.read_text().splitlines() == lines

    missing = httpx.post(srv.http_url + "/api/datasets", json={"name": "x", "queue": "nope"}, timeout=30)
    assert missing.status_code == 404 and "nope" in missing.text
    both = httpx.post(srv.http_url + "/api/datasets", json={"name": "x", "queue": "review", "trace_ids": [wrong]},
                      timeout=30)
    assert both.status_code == 422
