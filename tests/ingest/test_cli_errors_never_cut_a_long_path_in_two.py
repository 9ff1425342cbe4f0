"""An error that names a long path (a store under a deep directory, a spool beside it) was wrapped
by rich at the terminal's width, with a newline in the middle of the path: the path and the command
to run next could no longer be copied. Error lines are now never wrapped, however narrow the width."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.serve_process import clean_env


def _deep(tmp_path: Path, name: str) -> Path:
    return tmp_path / ("a-directory-with-a-rather-long-name-" * 3) / "and-another-level-below-it" / name


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**clean_env(), "COLUMNS": "40"}  # rich wraps at COLUMNS when stderr is not a terminal
    return subprocess.run([sys.executable, "-m", "steplens.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize("command", [
    ["migrate", "--from", "{path}", "--to", "chdb:///nowhere"],
    ["serve", "--config", "{path}"],
    ["spool", "list", "--config", "{path}"],
])
def test_the_path_in_an_error_line_is_whole(tmp_path: Path, command: list[str]) -> None:
    path = _deep(tmp_path, "steplens.toml" if "--config" in command else "steplens.duckdb")
    done = _run(*(str(path) if a == "{path}" else a for a in command))
    assert done.returncode == 2, done.stderr
    assert str(path) in done.stderr, f"the path is not whole in: {done.stderr!r}"
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
