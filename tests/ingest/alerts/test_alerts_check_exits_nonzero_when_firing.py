"""`steplens alerts check --api URL` (the real console script, in a subprocess) against a real
server: exit 0 when nothing fires, 1 when an alert fires, 2 when the server cannot be reached or
the key lacks the admin scope, so cron and CI never mistake a broken check for "all clear"; on each
store (DuckDB and ClickHouse)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from ingest.config import ApiKey
from tests.ingest.analytics.synthetic import now_utc, population, send, spread, store_overrides
from tests.ingest.api.harness import BACKENDS

STEPLENS = str(Path(sys.executable).with_name("steplens"))
RULE = {"name": "steps high", "kind": "threshold", "metric": "steps", "threshold": 2.0, "min_samples": 10}


def _check(api: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "STEPLENS_API_KEY"}
    if key:
        env["STEPLENS_API_KEY"] = key
    return subprocess.run([STEPLENS, "alerts", "check", "--api", api], capture_output=True, text=True, env=env,
                          timeout=60)


@pytest.mark.parametrize("backend", BACKENDS)
def test_exit_codes_follow_what_fires(server_on, tmp_path, backend: str) -> None:  # type: ignore[no-untyped-def]
    srv = server_on(alerts=[RULE], **store_overrides(backend, tmp_path))
    quiet = _check(srv.http_url)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "0 firing" in quiet.stdout

    rng = np.random.default_rng(9)
    now = now_utc()
    send(srv.http_url, srv.store, population(rng, 30, "cli_agent", "1", spread(now - timedelta(hours=1), now, 30, rng)))
    loud = _check(srv.http_url)
    assert loud.returncode == 1, loud.stdout + loud.stderr
    assert "steps high" in loud.stdout and "cli_agent" in loud.stdout


def test_unreachable_server_and_missing_admin_scope_exit_2(server_on, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]  # closed again: nothing listens there
    down = _check(f"http://127.0.0.1:{free}")
    assert down.returncode == 2 and "cannot reach" in down.stderr

    monkeypatch.setenv("STEPLENS_TEST_READ_KEY", "read-only-key-123")
    monkeypatch.setenv("STEPLENS_TEST_ADMIN_KEY", "admin-key-456")
    srv = server_on(alerts=[RULE], api_keys=[
        ApiKey(key_env="STEPLENS_TEST_READ_KEY", project="p", scopes=["read"]),
        ApiKey(key_env="STEPLENS_TEST_ADMIN_KEY", project="p", scopes=["admin"]),
    ], wait_key="admin-key-456")
    refused = _check(srv.http_url, "read-only-key-123")
    assert refused.returncode == 2 and "403" in refused.stderr
    assert "read-only-key-123" not in refused.stderr + refused.stdout
    assert _check(srv.http_url, "admin-key-456").returncode == 0
