"""`steplens eval run` for v1 and v2 saves results; `steplens eval compare` lists the cases v2
regressed (with why) and exits 1; comparing a run with itself finds nothing; unknown runs exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kernel.eval import load_run
from kernel.examples.datasets import TICKET_EVAL
from steplens.cli import app

ENV = {"COLUMNS": "250"}


def _subset(tmp_path: Path) -> Path:
    lines = TICKET_EVAL.read_text().splitlines()
    path = tmp_path / "subset.jsonl"
    path.write_text("\n".join(lines[:12] + lines[18:24] + lines[-6:]) + "\n")
    return path


def test_compare_shows_regressions_and_exit_codes(tmp_path: Path) -> None:
    dataset, out = _subset(tmp_path), tmp_path / "evals"
    runner = CliRunner()
    ids = []
    for version in ("v1", "v2"):
        result = runner.invoke(app, ["eval", "run", str(dataset), "--version", version, "--no-faults",
                                     "--out", str(out)], env=ENV)
        assert result.exit_code == 0, result.output
        [path] = [p for p in out.glob(f"ticket-{version}-*.json")]
        ids.append(path.stem)
    a, b = load_run(ids[0], out), load_run(ids[1], out)
    assert a.summary.cases == b.summary.cases == 24 and a.summary.success_rate == 1.0
    assert b.summary.mean_steps > a.summary.mean_steps
    regressed = sorted(c.case_id for c in b.cases if not c.passed)
    assert regressed and all(c.startswith(("simple-", "multi-where-")) for c in regressed)
    data = json.loads((out / f"{ids[1]}.json").read_text())
    assert {"success_rate", "mean_steps", "timeout_rate", "input_tokens", "cost_usd"} <= set(data["summary"])

    cmp = runner.invoke(app, ["eval", "compare", ids[0], ids[1], "--dir", str(out)], env=ENV)
    assert cmp.exit_code == 1, cmp.output
    assert f"{len(regressed)} regression(s), 0 improvement(s)" in cmp.output
    for case_id in regressed:
        assert case_id in cmp.output
    assert "took " in cmp.output and "at most" in cmp.output

    back = runner.invoke(app, ["eval", "compare", ids[1], ids[0], "--dir", str(out)], env=ENV)
    assert back.exit_code == 0 and f"0 regression(s), {len(regressed)} improvement(s)" in back.output
    same = runner.invoke(app, ["eval", "compare", str(out / f"{ids[0]}.json"), ids[0], "--dir", str(out)], env=ENV)
    assert same.exit_code == 0 and "0 regression(s), 0 improvement(s)" in same.output
    missing = runner.invoke(app, ["eval", "compare", ids[0], "nope", "--dir", str(out)], env=ENV)
    assert missing.exit_code == 2 and "no results for 'nope'" in missing.output
