"""A broken dataset is refused before anything runs, naming every bad line; the CLI exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernel.eval import DatasetError, load_dataset
from steplens.cli import app

GOOD = {"id": "a", "task": "Ticket T-1: where is A1001?", "expect": {"max_steps": 3}}


def test_every_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([
        json.dumps(GOOD),
        "# a comment",
        "{not json",
        json.dumps({"id": "b"}),  # no task
        json.dumps({**GOOD, "expect": {"max_step": 3}}),  # misspelt check: refused, not ignored
        json.dumps(GOOD),  # duplicate id
        "",
    ]))
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    problems = info.value.problems
    assert [p.split(":")[0] for p in problems] == ["line 3", "line 4", "line 5", "line 6"]
    assert "not JSON" in problems[0] and "task" in problems[1] and "max_step" in problems[2]
    assert "duplicate id 'a'" in problems[3]


def test_missing_or_empty_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot read"):
        load_dataset(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(DatasetError, match="no cases"):
        load_dataset(tmp_path / "empty.jsonl")


def test_cli_refuses_bad_dataset_agent_and_version(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(GOOD) + "\n")
    runner = CliRunner()
    out = runner.invoke(app, ["eval", "run", str(bad), "--out", str(tmp_path)])
    assert out.exit_code == 2 and "line 1" in out.output
    assert runner.invoke(app, ["eval", "run", str(good), "--agent", "nobody"]).exit_code == 2
    assert runner.invoke(app, ["eval", "run", str(good), "--version", "v9"]).exit_code == 2
    assert list(tmp_path.glob("*.json")) == []
