"""With --endpoint, every case is a normal traced run exported over OTLP to a real ingest server,
its run span carrying steplens.eval.run_id / case_id and mode eval; the stored runs' numbers match
the results file."""

from __future__ import annotations

from pathlib import Path

import httpx
from rich.console import Console

from kernel.eval import load_run
from kernel.eval.cli import eval_run_command
from kernel.examples.datasets import TICKET_EVAL
from tracer import conventions as c


def test_cases_are_stored_with_eval_labels(ingest_server, tmp_path: Path) -> None:
    dataset = tmp_path / "five.jsonl"
    dataset.write_text("\n".join(TICKET_EVAL.read_text().splitlines()[::12]) + "\n")
    out = tmp_path / "evals"
    code = eval_run_command(dataset, "ticket", "v1", ingest_server.http_url, seed=1, out_dir=out,
                            console=Console(width=200, record=True))
    assert code == 0
    [path] = out.glob("*.json")
    run = load_run(path)
    assert run.endpoint == ingest_server.http_url and run.spans_lost == 0 and run.spans_exported > 0
    assert ingest_server.store.wait_loaded(20)
    for case in run.cases:
        assert case.trace_id, case
        trace = httpx.get(f"{ingest_server.http_url}/api/traces/{case.trace_id}", timeout=10).json()
        [root] = [s for s in trace["spans"] if s["name"].startswith("invoke_agent")]
        attrs = root["attributes"]
        assert attrs[c.EVAL_RUN_ID] == run.run_id and attrs[c.EVAL_CASE_ID] == case.case_id
        assert attrs[c.RUN_MODE] == "eval"
        assert trace["run"]["input_tokens"] == case.input_tokens and trace["run"]["steps"] == case.steps
        assert trace["run"]["stop_reason"] == case.stop_reason


def test_no_server_no_run(tmp_path: Path) -> None:
    console = Console(width=200, record=True)
    code = eval_run_command(TICKET_EVAL, endpoint="http://127.0.0.1:9", out_dir=tmp_path, console=console)
    assert code == 2 and "no steplens server answers" in console.export_text()
    assert list(tmp_path.glob("*.json")) == []
