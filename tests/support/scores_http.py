"""Scores over real HTTP: the trace ids of stored runs, and POST /api/scores in batches.

Shared by the tests that plant judgments on runs sent as OTLP (regressions, alerts, datasets, eval).
"""

from __future__ import annotations

from typing import Any

import httpx

BATCH = 1000  # POST /api/scores takes at most 1,000 scores a request


def run_trace_ids(http_url: str, headers: dict[str, str] | None = None, **params: Any) -> list[str]:
    """Trace ids of every run `GET /api/runs` lists with `params`, oldest first (all pages)."""
    ids: list[str] = []
    cursor = None
    with httpx.Client(base_url=http_url, timeout=30, headers=headers) as client:
        while True:
            page = client.get("/api/runs", params={**params, "limit": 1000, "order": "asc",
                                                   **({"cursor": cursor} if cursor else {})})
            assert page.status_code == 200, page.text
            body = page.json()
            ids += [r["trace_id"] for r in body["runs"]]
            if not (cursor := body["next"]):
                return ids


def post_scores(http_url: str, scores: list[dict[str, Any]], store: object | None = None,
                headers: dict[str, str] | None = None) -> None:
    """POST `scores` in batches (each must be accepted whole), then wait until they are queryable."""
    with httpx.Client(base_url=http_url, timeout=60, headers=headers) as client:
        for i in range(0, len(scores), BATCH):
            r = client.post("/api/scores", json={"scores": scores[i:i + BATCH]})
            assert r.status_code == 200, r.text
            assert r.json()["accepted"] == len(scores[i:i + BATCH])
    if store is not None:
        assert store.wait_loaded(30), "scores acknowledged but not loaded within 30 s"  # type: ignore[attr-defined]


def list_scores(http_url: str, headers: dict[str, str] | None = None, **params: Any) -> list[dict[str, Any]]:
    """Every score `GET /api/scores` answers with `params` (all pages)."""
    out: list[dict[str, Any]] = []
    cursor = None
    with httpx.Client(base_url=http_url, timeout=30, headers=headers) as client:
        while True:
            page = client.get("/api/scores", params={**params, "limit": 1000, **({"cursor": cursor} if cursor else {})})
            assert page.status_code == 200, page.text
            body = page.json()
            out += body["scores"]
            if not (cursor := body["next"]):
                return out
