"""No server listening: one clear line saying how to start it, exit 2, nothing half-done, fast."""

from __future__ import annotations

import socket
import time

from typer.testing import CliRunner

from steplens.cli import app
from tests.ingest.importer.collector_files import FIXTURE


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_down_says_start_steplens_serve() -> None:
    api = f"http://127.0.0.1:{_closed_port()}"
    t0 = time.monotonic()
    result = CliRunner().invoke(app, ["import", str(FIXTURE), "--api", api])
    assert result.exit_code == 2, result.output
    assert f"cannot reach the steplens server at {api}" in result.output
    assert "steplens serve" in result.output
    assert "Traceback" not in result.output
    assert time.monotonic() - t0 < 10  # no retry marathon before saying so


def test_not_an_otlp_endpoint_is_a_clear_error(ingest_server) -> None:
    result = CliRunner().invoke(app, ["import", str(FIXTURE), "--api", ingest_server.http_url + "/nothing-here"])
    assert result.exit_code == 2, result.output
    assert "is not an OTLP/HTTP traces endpoint" in result.output
