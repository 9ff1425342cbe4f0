"""Helpers of the score tests: a real server (tests/ingest/conftest.py `start_ingest_server`) with
runs sent as real OTLP, and small HTTP helpers for /api/scores."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.ingest.api.otlp_runs import Emitter, RunSpec


def send_runs(base: str, specs: list[RunSpec], key: str | None = None) -> list[RunSpec]:
    """Emit `specs` as one real OTLP/protobuf export; returns them with their trace ids."""
    emitter = Emitter()
    runs = [emitter.run(spec) for spec in specs]
    headers = {"content-type": "application/x-protobuf", **({"x-api-key": key} if key else {})}
    r = httpx.post(base + "/v1/traces", content=emitter.request().SerializeToString(), headers=headers)
    assert r.status_code == 200, r.text
    return runs


def post_scores(base: str, body: Any, key: str | None = None) -> httpx.Response:
    return httpx.post(base + "/api/scores", json=body, headers={"x-api-key": key} if key else {}, timeout=30)


def get_scores(base: str, key: str | None = None, **params: Any) -> list[dict[str, Any]]:
    r = httpx.get(base + "/api/scores", params=params, headers={"x-api-key": key} if key else {}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["scores"]


@pytest.fixture
def scores_server(start_ingest_server: Callable[..., Any]) -> Any:
    """A server without keys and without gRPC."""
    return start_ingest_server(grpc_port=0)
