"""`steplens dataset create` (the real console script) says what happened in its exit code and
output: 0 saved, 1 saved but no run could be a case, 2 refused (bad filter, a key without the
annotate scope) or no server, with the server's reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ingest.config import ApiKey

STEPLENS = str(Path(sys.executable).with_name("steplens"))
READ_ONLY = "read-only-key-0123456789"


def _create(api: str, *args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "STEPLENS_API_KEY"}
    if key:
        env["STEPLENS_API_KEY"] = key
    return subprocess.run([STEPLENS, "dataset", "create", *args, "--api", api], capture_output=True, text=True,
                          env=env, timeout=60)


def test_exit_codes(start_ingest_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    srv = start_ingest_server(grpc_port=0, api_keys=[ApiKey(key=READ_ONLY, project="A", scopes=["read"])])
    empty = _create(srv.http_url, "nothing", "--filter", "agent=nobody", key=READ_ONLY)
    assert empty.returncode == 2 and "403" in empty.stderr, empty.stderr  # read may not annotate
    bad = _create(srv.http_url, "x", "--filter", "agent", key=READ_ONLY)
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr
    down = _create("http://127.0.0.1:9", "x", "--filter", "agent=a")
    assert down.returncode == 2 and "cannot reach" in down.stderr


def test_no_matching_run_is_exit_1_and_an_unknown_filter_is_refused(ingest_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "none.jsonl"
    none = _create(ingest_server.http_url, "nothing", "--filter", "agent=nobody", "--out", str(out))
    assert none.returncode == 1, none.stdout + none.stderr
    assert "0 cases" in none.stdout and out.read_text() == ""
    unknown = _create(ingest_server.http_url, "x", "--filter", "agnt=ops")
    assert unknown.returncode == 2 and "422" in unknown.stderr and "agnt" in unknown.stderr
