"""Each node role answers what it serves and refuses the rest with a 404 naming the role that serves
it; the singleton jobs run only on `all` and `worker`. These run the app exactly as `serve` composes
it (ingest.server.node_routers) on a real uvicorn server; the store under it is DuckDB, which `serve`
itself only allows for `all` (tests/ingest/roles/test_split_roles_refused_on_duckdb_*)."""

from __future__ import annotations

import httpx
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.ingest.roles.otlp import PROTOBUF, one_trace


def _export(url: str) -> httpx.Response:
    body, _ = one_trace(2)
    return httpx.post(url + "/v1/traces", content=body, headers=PROTOBUF)


def test_ingest_node_receives_but_refuses_the_query_api(start_ingest_server) -> None:
    srv = start_ingest_server(role="ingest")
    assert srv.grpc_target is not None  # OTLP/gRPC is an ingest receiver too
    r = _export(srv.http_url)
    assert r.status_code == 200
    ExportTraceServiceResponse.FromString(r.content)
    body, _ = one_trace(1)  # the Langfuse SDK's path is under /api, and still OTLP: served here
    assert httpx.post(srv.http_url + "/api/public/otel/v1/traces", content=body, headers=PROTOBUF).status_code == 200
    for path in ("/api/runs", "/api/overview", "/api", "/api/alerts"):
        r = httpx.get(srv.http_url + path)
        assert r.status_code == 404, path
        assert r.json()["error"]["reason"] == "wrong_role"
        assert "--role api" in r.json()["error"]["message"], r.text
    assert httpx.post(srv.http_url + "/api/scores", json={}).status_code == 404
    ready = httpx.get(srv.http_url + "/readyz").json()
    assert ready == {"status": "ready", "role": "ingest", "jobs": []}
    assert httpx.get(srv.http_url + "/healthz").json() == {"status": "ok", "role": "ingest"}


def test_api_node_answers_queries_but_refuses_otlp_in_otlp_form(start_ingest_server) -> None:
    srv = start_ingest_server(role="api")
    assert srv.grpc_target is None  # no OTLP/gRPC receiver on a query node
    assert httpx.get(srv.http_url + "/api/runs").status_code == 200
    assert httpx.get(srv.http_url + "/api/alerts").status_code == 200  # rules listed, not evaluated here
    r = _export(srv.http_url)
    assert r.status_code == 404
    status = Status.FromString(r.content)  # an OTLP exporter gets an OTLP Status it can log
    assert "--role ingest" in status.message
    r = httpx.post(srv.http_url + "/v1/logs", json={}, headers={"content-type": "application/json"})
    assert r.status_code == 404 and "--role ingest" in r.json()["message"]
    assert httpx.get(srv.http_url + "/readyz").json() == {"status": "ready", "role": "api", "jobs": []}


def test_worker_node_runs_the_jobs_and_serves_health_only(start_ingest_server) -> None:
    srv = start_ingest_server(role="worker", retention_days=7)
    assert srv.grpc_target is None
    ready = httpx.get(srv.http_url + "/readyz").json()
    assert ready["role"] == "worker" and set(ready["jobs"]) == {"alerts", "queue_fill", "retention"}, ready
    assert _export(srv.http_url).status_code == 404
    r = httpx.get(srv.http_url + "/api/runs")
    assert r.status_code == 404 and "--role api" in r.json()["error"]["message"]
    assert httpx.get(srv.http_url + "/metrics").status_code == 200


@pytest.mark.parametrize("role", ["ingest", "api"])
def test_no_singleton_job_thread_outside_all_and_worker(start_ingest_server, role) -> None:
    srv = start_ingest_server(role=role, retention_days=7)
    assert httpx.get(srv.http_url + "/readyz").json()["jobs"] == []
