"""Shared fixture: the FULL ingest server (real SpanStore on a temp DuckDB, OTLP/HTTP + gRPC +
query API, wired exactly as `steplens serve` wires it) on 127.0.0.1 with free ports.

    def test_x(ingest_server):                       # default settings
        httpx.post(ingest_server.http_url + "/v1/traces", ...)

    def test_y(start_ingest_server):                 # custom settings (any Settings field)
        srv = start_ingest_server(queue_max_bytes=1, api_keys=[...])

`srv.store.wait_loaded(5)` waits until acknowledged spans are queryable.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ingest.config import Settings
from ingest.metrics import IngestMetrics


@dataclass
class RunningServer:
    http_url: str  # e.g. http://127.0.0.1:40123
    grpc_target: str | None  # e.g. 127.0.0.1:40124 (None when grpc_port=0)
    settings: Settings
    store: Any  # ingest.store.SpanStore
    metrics: IngestMetrics


class _ServerThread:
    def __init__(self, settings: Settings) -> None:
        from ingest.jobs import store_settings
        from ingest.server import ServerStack, node_routers
        from ingest.store.backend import open_store

        self.metrics = IngestMetrics()
        self.store = open_store(store_settings(settings), self.metrics)  # settings.store: duckdb unless a test says
        self.store.start()
        try:
            self.stack = ServerStack(
                settings, self.store, self.metrics, node_routers(settings, self.store),
                ephemeral_ports=True, log_level="warning",
            )
        except BaseException:
            self.store.stop()
            raise
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="ingest-test-server", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self.stack.serve())
        except BaseException as exc:  # surfaced by start()/stop()
            self.error = exc

    def start(self) -> RunningServer:
        self.thread.start()
        while not self.stack.started.wait(0.05):
            if not self.thread.is_alive():
                self.store.stop()
                raise RuntimeError("ingest test server failed to start") from self.error
        port = self.stack.grpc_port
        return RunningServer(
            self.stack.http_url, f"127.0.0.1:{port}" if port else None, self.stack.settings, self.store, self.metrics
        )

    def stop(self) -> None:
        self.stack.request_stop()
        self.thread.join(20)
        self.store.stop()
        if self.thread.is_alive():
            raise RuntimeError("ingest test server did not stop within 20 s")
        if self.error is not None:
            raise self.error


@pytest.fixture
def start_ingest_server(tmp_path: Path, backend: str) -> Iterator[Callable[..., RunningServer]]:
    started: list[_ServerThread] = []

    def start(**overrides: Any) -> RunningServer:
        n = len(started)
        overrides.setdefault("store", backend)
        # Normalize in threads: dozens of servers per run would each spawn 2 worker processes.
        # The worker path is covered by tests/ingest/store/test_normalize_worker_process_*.py and by
        # every test that runs `steplens serve` as a subprocess with the production default.
        overrides.setdefault("normalize_processes", 0)
        overrides.setdefault("db", tmp_path / f"server{n}" / "steplens.duckdb")
        if overrides.get("store") == "clickhouse":  # embedded chDB beside the server's spool
            overrides.setdefault("clickhouse_url", f"chdb://{tmp_path / f'server{n}' / 'clickhouse'}")
        settings = Settings(host="127.0.0.1", **overrides)
        server = _ServerThread(settings)
        started.append(server)
        return server.start()

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture
def ingest_server(start_ingest_server: Callable[..., RunningServer]) -> RunningServer:
    return start_ingest_server()
