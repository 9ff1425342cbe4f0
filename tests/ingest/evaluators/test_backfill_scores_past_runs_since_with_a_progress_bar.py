"""`steplens eval backfill --rule R --since 7d` (the real console script, in a child process) scores the
rule's past runs that started within the range, through the running server, with a progress bar;
run again, it finds nothing left; without `--since`, it scores the older runs too.

The failure this covers: a rule added after the runs it should judge (or with a short lookback) left
the history unscored, with no way to judge it but re-sending the traces.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from ingest.evaluators.rules import EvaluatorRule
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter, RunSpec
from tests.ingest.evaluators.agent_runs import evaluators_of, scores_of

ROOT = Path(__file__).resolve().parents[3]
RULE = EvaluatorRule.model_validate({
    "name": "no-tool-error", "delay": "1s", "lookback": "1s",  # online only sees runs of the last second
    "evaluator": {"kind": "no_tool_error"}, "score": {"name": "no_tool_error"},
})


def _backfill(base: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    env.pop("STEPLENS_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "steplens.cli", "eval", "backfill", "--rule", RULE.name,
                           "--api", base, *args], capture_output=True, text=True, timeout=120, env=env, check=False)


@pytest.mark.parametrize("backend", BACKENDS)
def test_backfill_scores_the_range_once_with_progress(start_ingest_server: Callable[..., Any], backend: str) -> None:
    srv = start_ingest_server(store=backend, grpc_port=0, evaluators=[RULE], evaluator_poll_interval_s=0.2)
    now = datetime.now(UTC)
    emitter = Emitter()
    recent = [emitter.run(RunSpec(start=now - timedelta(days=d, hours=1), failing_tools=d % 2)) for d in range(6)]
    old = [emitter.run(RunSpec(start=now - timedelta(days=10 + d))) for d in range(2)]
    r = httpx.post(srv.http_url + "/v1/traces", content=emitter.request().SerializeToString(),
                   headers={"content-type": "application/x-protobuf"}, timeout=30)
    assert r.status_code == 200, r.text
    assert srv.store.wait_loaded(30)
    time.sleep(2.5)  # past the rule's lookback: the online pass will never take these runs
    assert evaluators_of(srv.http_url)["no-tool-error"]["summary"]["evaluated"] == 0

    done = _backfill(srv.http_url, "--since", "7d")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6/6" in done.stdout and "6 run(s) evaluated, 0 error(s)" in done.stdout
    scores = {s["trace_id"]: s["value"] for s in scores_of(srv.http_url)}
    assert scores == {run.trace_id: run.failing_tools == 0 for run in recent}

    again = _backfill(srv.http_url, "--since", "7d")
    assert again.returncode == 0 and "0 run(s) evaluated" in again.stdout, again.stdout + again.stderr

    everything = _backfill(srv.http_url)
    assert everything.returncode == 0 and "2 run(s) evaluated" in everything.stdout
    assert {s["trace_id"] for s in scores_of(srv.http_url)} == {run.trace_id for run in recent + old}
    assert evaluators_of(srv.http_url, since="30d")["no-tool-error"]["summary"]["evaluated"] == 8


def test_backfill_of_an_unknown_rule_or_without_a_server_exits_2(start_ingest_server: Callable[..., Any]) -> None:
    srv = start_ingest_server(grpc_port=0, evaluators=[RULE])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    unknown = subprocess.run([sys.executable, "-m", "steplens.cli", "eval", "backfill", "--rule", "nope", "--api",
                              srv.http_url], capture_output=True, text=True, timeout=60, env=env, check=False)
    assert unknown.returncode == 2 and "404" in unknown.stderr and "nope" in unknown.stderr
    down = _backfill("http://127.0.0.1:9")
    assert down.returncode == 2 and "cannot reach" in down.stderr
