"""`run_demo` through the real OTLP path into a real ingest server: the query API must hold exactly
the runs the kernel returned (count, per agent/version, stop reasons, ok, tokens, cost), and the
CLI body must refuse clearly when no server answers."""

from __future__ import annotations

import socket
from collections import Counter

import httpx
import pytest

from kernel.examples.cli import demo_command, server_problem
from kernel.examples.demo import run_demo, traces_url


def _all_runs(base: str) -> list[dict]:
    runs: list[dict] = []
    cursor = None
    while True:
        params = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
        page = httpx.get(f"{base}/api/runs", params=params, timeout=30).raise_for_status().json()
        runs += page["runs"]
        cursor = page["next"]
        if not cursor:
            return runs


def test_every_demo_run_is_stored_with_the_kernel_numbers(ingest_server) -> None:
    summary = run_demo(ingest_server.http_url, 120, seed=11, concurrency=16, progress=False)
    assert summary.runs == 120 and summary.export_complete, summary
    assert summary.spans_ended > 120 * 4  # run, steps, budget checks, chats, tools...
    assert ingest_server.store.wait_loaded(30)

    runs = _all_runs(ingest_server.http_url)
    assert len(runs) == summary.runs
    assert {r["trace_id"] for r in runs} == set(summary.trace_ids)
    by_group = Counter((r["agent"], r["version"]) for r in runs)
    assert by_group == Counter({k: g.runs for k, g in summary.groups.items() if g.runs})
    assert Counter(r["stop_reason"] for r in runs) == summary.stop_reasons
    assert sum(r["ok"] for r in runs) == summary.ok
    assert sum(r["input_tokens"] for r in runs) == summary.input_tokens
    assert sum(r["output_tokens"] for r in runs) == summary.output_tokens
    # Even a run with no priced span (its provider failed on every call) has a cost: the run span
    # declares the kernel's total, so the API says 0, never null, for the kernel's runs.
    assert all(r["cost_usd"] is not None for r in runs)
    assert sum(r["cost_usd"] for r in runs) == pytest.approx(summary.cost_usd, rel=1e-6)
    assert {"gpt-4o-mini", "claude-sonnet-4-5"} <= {m for r in runs for m in r["models"]}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_demo_command_says_when_no_server_answers(capsys) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    assert server_problem(url) is not None
    assert demo_command(url, runs=5) == 2
    assert "no steplens server answers" in capsys.readouterr().out


def test_endpoint_may_be_the_base_url_or_the_traces_url() -> None:
    assert traces_url("http://h:1") == traces_url("http://h:1/") == traces_url("http://h:1/v1/traces") == "http://h:1/v1/traces"


def test_steplens_demo_command_is_wired(capsys) -> None:
    from typer.testing import CliRunner

    from steplens.cli import app

    result = CliRunner().invoke(app, ["demo", "--endpoint", f"http://127.0.0.1:{_closed_port()}", "--runs", "3"])
    assert result.exit_code == 2, result.output
