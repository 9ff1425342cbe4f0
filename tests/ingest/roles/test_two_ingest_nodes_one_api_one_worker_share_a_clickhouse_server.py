"""The deployment of docker-compose.clickhouse.yml as processes on one real ClickHouse server: two
ingest nodes, one api node and one worker at the same time. Spans sent to either ingest node are
stored once in the shared database, only the worker reports the singleton jobs, and the api node
serves the query API over the same data. Runs only when STEPLENS_TEST_CLICKHOUSE_URL names a server
(user and password from STEPLENS_TEST_CLICKHOUSE_USER/_PASSWORD); chDB, used everywhere else, is one
process at a time, so it cannot host this."""

from __future__ import annotations

import os
import uuid
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.ingest.roles.otlp import PROTOBUF, one_trace
from tests.support.serve_process import Node, serving

URL = os.environ.get("STEPLENS_TEST_CLICKHOUSE_URL")
pytestmark = pytest.mark.skipif(not URL, reason="STEPLENS_TEST_CLICKHOUSE_URL is not set (no ClickHouse server)")


def test_split_nodes_share_one_database(tmp_path: Path) -> None:
    from ingest.store.clickhouse.transport import HttpTransport

    assert URL is not None
    user = os.environ.get("STEPLENS_TEST_CLICKHOUSE_USER", "default")
    password = os.environ.get("STEPLENS_TEST_CLICKHOUSE_PASSWORD", "")
    database = f"steplens_test_{uuid.uuid4().hex[:12]}"
    env = {"STEPLENS_STORE": "clickhouse", "STEPLENS_CLICKHOUSE_URL": URL, "STEPLENS_CLICKHOUSE_USER": user,
           "STEPLENS_CLICKHOUSE_PASSWORD": password, "STEPLENS_CLICKHOUSE_DATABASE": database,
           "STEPLENS_RETENTION_DAYS": "30", "STEPLENS_NORMALIZE_PROCESSES": "0"}
    admin = HttpTransport(URL, user, password, "default")
    try:
        with ExitStack() as nodes:
            def node(role: str, name: str) -> Node:
                return nodes.enter_context(serving(["--role", role, "--db", str(tmp_path / name / "s.duckdb")], env=env))

            ingest = [node("ingest", "ingest-1"), node("ingest", "ingest-2")]
            api, worker = node("api", "api"), node("worker", "worker")
            sent = {}
            for i in range(6):
                body, trace_id = one_trace(3)
                target = ingest[i % 2]
                assert httpx.post(target.url + "/v1/traces", content=body, headers=PROTOBUF).status_code == 200
                if i == 0:  # a retry of the same export on the other node: one span each under FINAL
                    assert httpx.post(ingest[1].url + "/v1/traces", content=body, headers=PROTOBUF).status_code == 200
                sent[trace_id] = 3
            jobs = {n: httpx.get(u.url + "/readyz").json()["jobs"] for n, u in
                    (("ingest-1", ingest[0]), ("ingest-2", ingest[1]), ("api", api), ("worker", worker))}
            assert jobs == {"ingest-1": [], "ingest-2": [], "api": [], "worker": ["alerts", "retention"]}, jobs
            assert httpx.get(api.url + "/api/prices").status_code == 200
            assert httpx.get(ingest[0].url + "/api/prices").status_code == 404
        # every node stopped with SIGTERM: each loaded its spool into ClickHouse first
        data = HttpTransport(URL, user, password, database)
        try:
            stored = data.query_arrow(
                "SELECT trace_id, count() AS n FROM spans FINAL WHERE trace_id IN {t:Array(String)} GROUP BY trace_id",
                {"t": list(sent)},
            ).to_pylist()
        finally:
            data.close()
        assert {r["trace_id"]: r["n"] for r in stored} == sent
    finally:
        admin.command(f"DROP DATABASE IF EXISTS `{database}`")
        admin.close()
