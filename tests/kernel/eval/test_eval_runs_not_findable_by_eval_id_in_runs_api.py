"""`GET /api/runs` had no filter for an evaluation, so an eval's runs could only be found trace by
trace. Two evaluations (ticket v1, planner v2) go to a real server next to ordinary runs;
`eval_run_id` returns exactly one evaluation's runs, `eval_case_id` narrows to one case, and an
unknown id returns none (never everything)."""

from __future__ import annotations

from pathlib import Path

import httpx
from rich.console import Console

from kernel.eval import load_run
from kernel.eval.cli import eval_run_command
from kernel.examples.datasets import TICKET_EVAL
from kernel.examples.demo import run_demo


def _evaluate(api: str, dataset: Path, agent: str, version: str, out: Path) -> object:
    code = eval_run_command(dataset, agent, version, api, seed=2, out_dir=out, console=Console(width=200, record=True))
    assert code in (0, 1)  # 1: some cases failed their expectations, which is fine here
    [path] = sorted(out.glob("*.json"), key=lambda p: p.stat().st_mtime)[-1:]
    return load_run(path)


def test_runs_filtered_by_eval_run_and_case(ingest_server, tmp_path: Path) -> None:
    api = ingest_server.http_url
    dataset = tmp_path / "four.jsonl"
    dataset.write_text("\n".join(TICKET_EVAL.read_text().splitlines()[::15]) + "\n")
    first = _evaluate(api, dataset, "ticket", "v1", tmp_path / "a")
    second = _evaluate(api, dataset, "ticket", "v2", tmp_path / "b")
    run_demo(api, runs=5, seed=3, concurrency=2, progress=False)
    assert ingest_server.store.wait_loaded(20)

    every = httpx.get(f"{api}/api/runs", params={"limit": 1000, "mode": "all"}, timeout=10).json()["runs"]
    assert len(every) == len(first.cases) + len(second.cases) + 5
    live = httpx.get(f"{api}/api/runs", params={"limit": 1000}, timeout=10).json()["runs"]
    assert len(live) == 5 and {r["mode"] for r in live} == {"live"}  # eval runs stay out of live figures

    for ev in (first, second):
        page = httpx.get(f"{api}/api/runs", params={"eval_run_id": ev.run_id, "limit": 1000}, timeout=10)
        assert page.status_code == 200, page.text
        runs = page.json()["runs"]
        assert sorted(r["trace_id"] for r in runs) == sorted(case.trace_id for case in ev.cases)
        assert {r["mode"] for r in runs} == {"eval"}
        assert {r["version"] for r in runs} == {ev.version}

    case = first.cases[0]
    one = httpx.get(f"{api}/api/runs", params={"eval_run_id": first.run_id, "eval_case_id": case.case_id},
                    timeout=10).json()["runs"]
    assert [r["trace_id"] for r in one] == [case.trace_id]
    none = httpx.get(f"{api}/api/runs", params={"eval_run_id": "no-such-eval"}, timeout=10).json()["runs"]
    assert none == []
