"""A score's id decides which one is kept: a later score with the same id and a newer `created_at`
replaces the stored one (a person changes a label), an older one is ignored (a late duplicate), and
a retried POST stores one score, whether it names its id or lets the server derive it.

The failure this covers: a retried feedback POST counted twice in every mean, or a reviewer's
corrected label losing to the wrong one because it arrived in the same batch or after a restart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.scores.conftest import get_scores, post_scores

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store

AT = datetime(2026, 2, 1, 8, 0, tzinfo=UTC)
TRACE = "abcdef0123456789abcdef0123456789"


def _label(base: str, **params: Any) -> list[Any]:
    return [s["value"] for s in get_scores(base, trace_id=TRACE, **params)]


def test_newer_replaces_older_ignored_retry_once(scores_server: Any) -> None:
    base = scores_server.http_url
    first = {"name": "verdict", "value": "wrong", "trace_id": TRACE, "source": "human", "author": "ana",
             "created_at": AT.isoformat()}
    ids = [post_scores(base, first).json()["score_ids"][0] for _ in range(3)]  # retried POST
    assert len(set(ids)) == 1
    assert scores_server.store.wait_loaded(10)
    assert _label(base) == ["wrong"]

    # the same person relabels: same derived id, newer time -> replaced
    assert post_scores(base, {**first, "value": "right", "created_at": (AT + timedelta(minutes=5)).isoformat()}
                       ).status_code == 200
    assert scores_server.store.wait_loaded(10)
    assert _label(base) == ["right"]

    # an older copy arriving late is ignored
    assert post_scores(base, {**first, "value": "stale", "created_at": (AT - timedelta(hours=1)).isoformat()}
                       ).status_code == 200
    assert scores_server.store.wait_loaded(10)
    assert _label(base) == ["right"]

    # another author is another score (another derived id)
    assert post_scores(base, {**first, "author": "ben", "value": "wrong"}).status_code == 200
    assert scores_server.store.wait_loaded(10)
    assert sorted(_label(base)) == ["right", "wrong"]

    # within one batch the newest of an id wins, wherever it sits
    named = {"name": "grade", "value": 1, "trace_id": TRACE, "score_id": "client-chosen-id"}
    batch = [{**named, "value": 3, "created_at": (AT + timedelta(seconds=3)).isoformat()},
             {**named, "value": 9, "created_at": (AT + timedelta(seconds=9)).isoformat()},
             {**named, "value": 5, "created_at": (AT + timedelta(seconds=5)).isoformat()}]
    r = post_scores(base, batch)
    assert r.json()["score_ids"] == ["client-chosen-id"] * 3
    assert scores_server.store.wait_loaded(10)
    assert _label(base, name="grade") == [9.0]

    # a retry without created_at gets a newer time each time: still one row
    loose = {"name": "thumbs", "value": True, "trace_id": TRACE, "source": "client"}
    for _ in range(3):
        assert post_scores(base, loose).status_code == 200
    assert scores_server.store.wait_loaded(10)
    assert _label(base, name="thumbs") == [True]
    with scores_server.store.read() as cur:
        per_id = cur.execute("SELECT score_id, count(*) FROM scores GROUP BY ALL HAVING count(*) > 1").fetchall()
    assert per_id == []


def test_replacement_holds_across_a_restart(start_ingest_server: Any, tmp_path: Any) -> None:
    db = tmp_path / "restart" / "steplens.duckdb"
    same = {"db": db, "clickhouse_url": f"chdb://{tmp_path / 'restart' / 'clickhouse'}"}  # the url: on ClickHouse
    srv = start_ingest_server(grpc_port=0, **same)
    score = {"name": "verdict", "value": "right", "trace_id": TRACE, "created_at": AT.isoformat()}
    assert post_scores(srv.http_url, score).status_code == 200
    assert srv.store.wait_loaded(10)
    srv.store.stop()  # the first server's store closes; a new one opens the same files
    again = start_ingest_server(grpc_port=0, **same)
    assert post_scores(again.http_url, {**score, "value": "old", "created_at": (AT - timedelta(days=1)).isoformat()}
                       ).status_code == 200
    assert post_scores(again.http_url, {**score, "value": "newest", "created_at": (AT + timedelta(days=1)).isoformat()}
                       ).status_code == 200
    assert again.store.wait_loaded(10)
    assert [s["value"] for s in get_scores(again.http_url, trace_id=TRACE)] == ["newest"]
