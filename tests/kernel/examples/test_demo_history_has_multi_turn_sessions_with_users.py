"""The demo history's live runs are conversations of end users: `/api/sessions` on a real server fed by
`steplens demo` (real OTLP) lists exactly the sessions the plan chained, each with its user, its turns
in order with the task the user gave as the turn's input, and totals equal to its runs' sums.

The failure this covers: the demo's runs named no conversation and no user, so the Sessions page of
a fresh `make run` was empty.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import httpx
import pytest

from ingest.config import Settings
from kernel.examples.demo import run_demo
from kernel.examples.history import plan_history
from kernel.examples.sessions import MAX_TURNS
from tests.ingest.conftest import _ServerThread

pytestmark = pytest.mark.timeout(300)

RUNS, DAYS, SEED = 160, 14, 3


def _get(url: str, path: str, **params: object) -> dict:
    return httpx.get(url + path, params=params, timeout=60).raise_for_status().json()


def test_demo_sessions_are_the_planned_conversations(tmp_path: Path) -> None:
    thread = _ServerThread(Settings(db=tmp_path / "steplens.duckdb", host="127.0.0.1", grpc_port=0,
                                    normalize_processes=0))  # fmt: skip
    server = thread.start()
    try:
        summary = run_demo(server.http_url, RUNS, seed=SEED, concurrency=16, progress=False, days=DAYS)
        assert summary.export_complete and summary.story is not None
        assert server.store.wait_loaded(60)
        _, plans = plan_history(RUNS, DAYS, SEED, summary.story.end)
        planned: dict[str, list] = defaultdict(list)
        for plan in plans:
            if plan.mode == "live":
                assert plan.conversation_id and plan.user_id
                planned[plan.conversation_id].append(plan)
            else:
                assert plan.conversation_id is None  # eval and shadow runs are no one's conversation

        listed, cursor = [], None
        while True:
            page = _get(server.http_url, "/api/sessions", since="30d", limit=50, **({"cursor": cursor} if cursor else {}))
            listed += page["sessions"]
            cursor = page["next"]
            if cursor is None:
                break
        assert {s["session_id"]: s["runs"] for s in listed} == {k: len(v) for k, v in planned.items()}
        assert any(s["runs"] >= 2 for s in listed) and max(s["runs"] for s in listed) <= MAX_TURNS
        assert all(s["users"] == [planned[s["session_id"]][0].user_id] for s in listed)

        multi = sorted((s for s in listed if s["runs"] >= 2), key=lambda s: s["session_id"])[:5]
        for s in multi:
            detail = _get(server.http_url, f"/api/sessions/{s['session_id']}")
            assert [t["input"] for t in detail["turns"]] == [p.task for p in planned[s["session_id"]]]
            assert all(t["output"] for t in detail["turns"] if t["ok"])  # a finished run answered
            runs = _get(server.http_url, "/api/runs", since="30d", conversation=s["session_id"], limit=100)["runs"]
            assert sorted(t["trace_id"] for t in detail["turns"]) == sorted(r["trace_id"] for r in runs)
            assert detail["input_tokens"] == s["input_tokens"] == sum(r["input_tokens"] for r in runs)
            assert detail["output_tokens"] == sum(r["output_tokens"] for r in runs)
            assert detail["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in runs))
            assert detail["failures"] == sum(1 for r in runs if not r["ok"])
    finally:
        thread.stop()
