"""`steplens trace show ID --api URL` (the real console script, in a subprocess) prints the run
and its spans as a tree with errors and truncation marked; unknown ids and a down API exit
non-zero with a message."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from kernel.truncation import truncate_observation
from tests.dashboards.conftest import LoadedServer
from tests.dashboards.test_api_down_or_old_server_gives_clear_messages import closed_port_url
from tests.dashboards.workload import dump_listing

STEPLENS = shutil.which("steplens", path=str(Path(sys.executable).parent)) or "steplens"


def trace_show(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("STEPLENS_API_KEY", None)
    return subprocess.run([STEPLENS, "trace", "show", *args], capture_output=True, text=True, timeout=60, env=env)


def test_failed_run_tree_shows_steps_tools_and_errors(loaded_server: LoadedServer) -> None:
    out = trace_show(loaded_server.runs.failed, "--api", loaded_server.url)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "invoke_agent fetcher" in text and "failed: tool_error_exhausted" in text
    assert "├── step 1" in text or "└── step 1" in text
    assert "execute_tool flaky" in text and "ERROR exception RuntimeError: backend 500 for a" in text
    lines = text.splitlines()
    step = next(i for i, line in enumerate(lines) if "step 1" in line and "action=flaky" in line)
    tool = next(i for i, line in enumerate(lines) if "execute_tool flaky" in line)
    assert lines[tool].index("execute_tool") > lines[step].index("step 1")  # nested under its step


def test_truncation_is_marked(loaded_server: LoadedServer) -> None:
    out = trace_show(loaded_server.runs.truncated, "--api", loaded_server.url)
    assert out.returncode == 0, out.stderr
    # what the kernel's truncation dropped from the workload's `dump` observation (its 60-token limit)
    dropped = truncate_observation(dump_listing(400), 60).dropped_tokens
    assert dropped > 7000
    assert f"truncated: {dropped} tokens dropped" in out.stdout and "(truncated)" in out.stdout


def test_big_trace_is_capped(loaded_server: LoadedServer) -> None:
    out = trace_show(loaded_server.wide_trace, "--api", loaded_server.url, "--max-spans", "50")
    assert out.returncode == 0, out.stderr
    assert "9951 more spans not shown" in out.stdout


def test_unknown_trace_and_down_api_exit_nonzero_with_a_message(loaded_server: LoadedServer) -> None:
    out = trace_show("0" * 32, "--api", loaded_server.url)
    assert out.returncode == 2 and "not found" in out.stderr
    out = trace_show("0" * 32, "--api", closed_port_url())
    assert out.returncode == 1 and "steplens serve" in out.stderr
