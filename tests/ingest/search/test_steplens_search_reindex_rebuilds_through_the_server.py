"""`steplens search reindex` (a real subprocess) asks the running server to rebuild its index and follows
it until current; `steplens search status` reports the lag; a key without the operator scope is refused
with exit code 2 and the server's reason. On both stores (on ClickHouse the rebuild writes search_docs
again from the stored spans)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.config import ApiKey
from tests.ingest.api.content_runs import ContentRun, emit, wait_indexed
from tests.ingest.api.harness import BACKENDS, start_server, stop_server
from tests.ingest.api.otlp_runs import Emitter

REPO = Path(__file__).resolve().parents[3]
OPS, READ = "cli-operator-key-0123456789", "cli-read-key-0123456789"


def _steplens(*args: str, key: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STEPLENS_API_KEY": key, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "steplens.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reindex_and_status_from_the_terminal(tmp_path, backend):
    server, stack, thread = start_server(
        tmp_path, [ApiKey(key=OPS, project="ops", scopes=["operator"]), ApiKey(key=READ, project="A")], 10.0,
        backend,
    )
    try:
        e = Emitter()
        run = emit(e, ContentRun("ops", "the echidna question"))
        server.send(e.request(), key=READ)
        wait_indexed(server, OPS)
        done = _steplens("search", "reindex", "--api", server.url, key=OPS)
        assert done.returncode == 0, done.stderr + done.stdout
        assert "rebuild started" in done.stdout and "search index: current" in done.stdout
        found = server.get("/api/search", READ, q="echidna", since="2000-01-01").json()["results"]
        assert [r["trace_id"] for r in found] == [run.trace_id]
        status = _steplens("search", "status", "--api", server.url, key=READ)
        assert status.returncode == 0 and "0 span(s) waiting" in status.stdout, status.stdout + status.stderr
        refused = _steplens("search", "reindex", "--api", server.url, key=READ)
        assert refused.returncode == 2 and "HTTP 403" in refused.stdout + refused.stderr
    finally:
        stop_server(server, stack, thread)
