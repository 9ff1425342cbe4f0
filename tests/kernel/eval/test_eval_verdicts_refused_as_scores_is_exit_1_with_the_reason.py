"""An evaluation whose key may send spans but not scores (scope ingest only) still exports its runs,
but `eval run` exits 1 and says the verdicts were not stored and why (the annotate scope), and the
results file records it; with a key that has both scopes every verdict is stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from ingest.config import ApiKey
from kernel.eval import load_run
from kernel.eval.cli import eval_run_command
from kernel.examples.datasets import TICKET_EVAL

INGEST_ONLY = "ingest-only-key-0123456789"
BOTH = "ingest-annotate-key-0123456789"


def _three_cases(tmp_path: Path) -> Path:
    dataset = tmp_path / "three.jsonl"
    dataset.write_text("\n".join(TICKET_EVAL.read_text().splitlines()[:3]) + "\n")
    return dataset


def test_refused_scores_exit_1_with_the_reason(start_ingest_server, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    srv = start_ingest_server(grpc_port=0, api_keys=[ApiKey(key=INGEST_ONLY, project="A", scopes=["ingest"]),
                                                     ApiKey(key=BOTH, project="A", scopes=["ingest", "annotate"])])
    dataset = _three_cases(tmp_path)
    monkeypatch.setenv("STEPLENS_API_KEY", INGEST_ONLY)
    console = Console(width=200, record=True)
    code = eval_run_command(dataset, "ticket", "v1", srv.http_url, out_dir=tmp_path / "a", console=console)
    said = console.export_text()
    assert code == 1, said
    assert "case verdicts not stored as scores (0 accepted)" in said and "annotate" in said
    run = load_run(next((tmp_path / "a").glob("*.json")))
    assert run.spans_lost == 0 and run.scores_posted == 0 and "403" in (run.scores_error or "")

    monkeypatch.setenv("STEPLENS_API_KEY", BOTH)
    console = Console(width=200, record=True)
    assert eval_run_command(dataset, "ticket", "v1", srv.http_url, out_dir=tmp_path / "b", console=console) == 0
    assert "3 case verdicts stored as scores" in console.export_text()
