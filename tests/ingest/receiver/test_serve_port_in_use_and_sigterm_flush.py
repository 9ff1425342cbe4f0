"""`steplens serve` as users run it: a taken port or an open bind without keys is one clear line and
exit code 2 (no traceback); SIGTERM stops it cleanly with every acknowledged span in DuckDB."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
import pytest

SERVE = [sys.executable, "-m", "steplens.cli", "serve"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("STEPLENS_", "OTEL_"))}


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVE, "--db", str(tmp_path / "s.duckdb"), *args], capture_output=True, text=True, timeout=60, env=_env()
    )


@pytest.fixture
def taken_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock.getsockname()[1]
    sock.close()


def test_taken_http_port_is_one_clear_line(tmp_path, taken_port) -> None:
    done = _run(["--port", str(taken_port), "--grpc-port", "0"], tmp_path)
    assert done.returncode == 2
    assert f"port {taken_port} is in use" in done.stderr and "--port" in done.stderr
    assert "Traceback" not in done.stderr


def test_taken_grpc_port_is_one_clear_line(tmp_path, taken_port) -> None:
    done = _run(["--port", "0", "--grpc-port", str(taken_port)], tmp_path)
    assert done.returncode == 2
    assert "--grpc-port" in done.stderr and "Traceback" not in done.stderr


def test_open_bind_without_keys_is_refused_with_instructions(tmp_path) -> None:
    done = _run(["--host", "0.0.0.0", "--port", "0", "--grpc-port", "0"], tmp_path)
    assert done.returncode == 2
    assert "without API keys" in done.stderr and "Traceback" not in done.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sigterm_flushes_acknowledged_spans_and_exits_zero(tmp_path, make_request) -> None:
    port, db = _free_port(), tmp_path / "s.duckdb"
    proc = subprocess.Popen(
        [*SERVE, "--db", str(db), "--port", str(port), "--grpc-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "server did not become ready"
            time.sleep(0.1)
        req = make_request(5)
        tid = req.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
        r = httpx.post(url + "/v1/traces", content=req.SerializeToString(),
                       headers={"content-type": "application/x-protobuf"})
        assert r.status_code == 200
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM spans WHERE trace_id = ?", [tid]).fetchone() == (5,)
