"""Starting a real steplens server (SpanStore + receiver + query API) on 127.0.0.1, port 0.

Data goes in the way a client sends it (OTLP/HTTP protobuf POSTs of SDK-made spans) and comes out
through the query API over real HTTP, so tests using this cover the whole read path.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.api import build_query_router
from ingest.config import ApiKey, Settings
from ingest.metrics import IngestMetrics
from ingest.server import ServerStack
from ingest.store.backend import open_store
from ingest.store.store import SpanStore

# The storage backends a contract test can run over: `@pytest.mark.parametrize("backend", BACKENDS)`
# (the `backend` fixture of conftest.py defaults to duckdb). ClickHouse runs on embedded chDB.
BACKENDS = ("duckdb", "clickhouse")


@dataclass
class Server:
    url: str
    store: SpanStore
    settings: Settings

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def send(self, request: ExportTraceServiceRequest, key: str | None = None) -> None:
        """POST one OTLP/HTTP protobuf request and wait until it is queryable."""
        with self.client(key) as c:
            r = c.post(
                "/v1/traces",
                content=request.SerializeToString(),
                headers={"Content-Type": "application/x-protobuf"},
            )
        assert r.status_code == 200, r.text
        assert self.store.wait_loaded(30), "spans were acknowledged but not loaded within 30 s"

    def get(self, path: str, key: str | None = None, **params: Any) -> httpx.Response:
        with self.client(key) as c:
            return c.get(path, params={k: v for k, v in params.items() if v is not None})


def start_server(
    tmp_path: Path, api_keys: list[ApiKey], query_timeout_s: float, backend: str = "duckdb", **overrides: Any
) -> tuple[Server, ServerStack, threading.Thread]:
    """`overrides`: more Settings fields (e.g. `search_index=`); `backend`: one of BACKENDS."""
    if backend == "clickhouse":
        overrides = {"store": "clickhouse", "clickhouse_url": f"chdb://{tmp_path / 'clickhouse'}", **overrides}
    settings = Settings(
        host="127.0.0.1",
        grpc_port=0,
        db=tmp_path / "steplens.duckdb",
        api_keys=api_keys,
        query_timeout_s=query_timeout_s,
        **overrides,
    )
    metrics = IngestMetrics()
    store = open_store(settings, metrics)
    store.start()
    router = build_query_router(store, timeout_s=settings.query_timeout_s)
    stack = ServerStack(settings, store, metrics, [("/api", router)], ephemeral_ports=True, log_level="warning")
    thread = threading.Thread(target=lambda: asyncio.run(stack.serve()), daemon=True)
    thread.start()
    if not stack.started.wait(15):
        stack.request_stop()
        store.stop()
        raise RuntimeError("server did not start within 15 s")
    return Server(stack.http_url, store, settings), stack, thread




def stop_server(server: Server, stack: ServerStack, thread: threading.Thread) -> None:
    stack.request_stop()
    thread.join(15)
    server.store.stop()


# API segments whose answers need a ClickHouse query module of the same name before they work there
_QUERY_SEGMENTS = {"search": "search", "diff": "diff", "sessions": "sessions", "graph": "graph"}


def not_ported(store: object, segment: str) -> bool:
    """True while the API segment `segment` (e.g. "regressions") is not served on `store` yet: listed
    in ingest/api/not_available.py's DUCKDB_ONLY, or its ClickHouse query module does not exist. A
    test on both stores checks that part as soon as it is ported."""
    import importlib.util

    from ingest.api.not_available import DUCKDB_ONLY

    if getattr(store, "name", "duckdb") != "clickhouse":
        return False
    module = _QUERY_SEGMENTS.get(segment)
    if module is not None and importlib.util.find_spec(f"ingest.store.clickhouse.queries.{module}") is None:
        return True
    return segment in DUCKDB_ONLY


def backend_settings(tmp: Path, backend: str) -> dict[str, Any]:
    """The Settings fields that put a test's own server on `backend` (chDB under `tmp` for ClickHouse)."""
    if backend == "clickhouse":
        return {"store": "clickhouse", "clickhouse_url": f"chdb://{tmp / 'clickhouse'}"}
    return {"store": "duckdb"}
