"""Two projects on one real server: the same agent's runs (versions 1 and 2) sent as OTLP with each
project's key, for tests that a read path never mixes one project's runs or scores into another's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import numpy as np

from ingest.config import ApiKey
from tests.ingest.analytics.synthetic import encode, now_utc, population, spread

KEYS = {"A": "key-of-project-a-0123456789", "B": "key-of-project-b-0123456789", "ops": "operator-key-0123456789"}
AGENT = "shared_agent"  # the same agent name in both projects
PER_VERSION = 40


@dataclass
class TwoProjects:
    srv: Any
    traces: dict[str, dict[str, list[str]]]  # project -> version -> trace ids

    def headers(self, project: str) -> dict[str, str]:
        return {"x-api-key": KEYS[project]}


def start_two_projects(start_ingest_server: Callable[..., Any]) -> TwoProjects:
    srv = start_ingest_server(grpc_port=0, alerts_defaults=False, api_keys=[
        ApiKey(key=KEYS["A"], project="A", scopes=["admin"]), ApiKey(key=KEYS["B"], project="B", scopes=["admin"]),
        ApiKey(key=KEYS["ops"], project="ops", scopes=["operator"])])
    rng = np.random.default_rng(4)
    now = now_utc()
    traces: dict[str, dict[str, list[str]]] = {}
    for project in ("A", "B"):
        old = spread(now - timedelta(days=5), now - timedelta(days=3), PER_VERSION, rng)
        new = spread(now - timedelta(days=2), now - timedelta(hours=1), PER_VERSION, rng)
        runs = population(rng, PER_VERSION, AGENT, "1", old) + population(rng, PER_VERSION, AGENT, "2", new)
        r = httpx.post(srv.http_url + "/v1/traces", content=encode(runs), timeout=30,
                       headers={"Content-Type": "application/x-protobuf", "x-api-key": KEYS[project]})
        assert r.status_code == 200, r.text
    assert srv.store.wait_loaded(30)
    for project in ("A", "B"):
        traces[project] = {}
        for version in ("1", "2"):
            body = httpx.get(srv.http_url + "/api/runs", params={"version": version, "limit": 1000}, timeout=30,
                             headers={"x-api-key": KEYS[project]}).json()
            traces[project][version] = [r["trace_id"] for r in body["runs"]]
            assert len(traces[project][version]) == PER_VERSION
    return TwoProjects(srv, traces)
