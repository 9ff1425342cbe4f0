"""POST /api/scores takes at most 1,000 scores: 1,000 are stored, 1,001 are a 413 saying to split
the batch and none of them is stored; a malformed body or score is a 4xx naming what is wrong.

The failure this covers: an unbounded batch held in memory and spooled as one record, or a
half-stored batch that a client's retry then cannot tell apart from a complete one."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.scores.conftest import get_scores, post_scores

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


def _batch(n: int, name: str) -> list[dict[str, Any]]:
    return [{"name": name, "value": i % 2 == 0, "trace_id": f"{i:032x}"} for i in range(n)]


def test_batch_limit(scores_server: Any) -> None:
    base = scores_server.http_url
    r = post_scores(base, {"scores": _batch(1000, "full")})
    assert r.status_code == 200 and r.json()["accepted"] == 1000
    over = post_scores(base, {"scores": _batch(1001, "over")})
    assert over.status_code == 413 and "at most 1000" in over.text
    assert scores_server.store.wait_loaded(10)
    assert len(get_scores(base, name="full", limit=1000)) == 1000
    assert get_scores(base, name="over") == []


def test_malformed_bodies_and_scores_are_4xx(scores_server: Any) -> None:
    base = scores_server.http_url
    not_json = httpx.post(base + "/api/scores", content=b"{nope", headers={"content-type": "application/json"})
    assert not_json.status_code == 400 and "not JSON" in not_json.text
    cases = [
        ({"name": "x", "value": 1}, "needs a target"),
        ({"name": "x", "value": 1, "trace_id": "xyz"}, "32 hex"),
        ({"name": "x", "value": 1, "span_id": "0" * 16, "session_id": "s"}, "span_id needs the trace_id"),
        ({"name": "x", "value": 1, "session_id": "s", "source": "robot"}, "source"),
        ({"name": "", "value": 1, "session_id": "s"}, "name"),
        ({"name": "x", "value": [1], "session_id": "s"}, "value"),
        ({"name": "x", "value": 1, "session_id": "s", "created_at": "3000-01-01T00:00:00Z"}, "created_at"),
        ({"name": "x", "value": 1, "session_id": "s", "extra": 1}, "extra"),
        ({"name": "x", "value": "a", "data_type": "numeric", "session_id": "s"}, "must be a number"),
        ({"name": "x", "value": 2, "data_type": "boolean", "session_id": "s"}, "must be true or false"),
    ]
    for body, needle in cases:
        r = post_scores(base, [{"name": "fine", "value": 1, "session_id": "s"}, body])
        assert r.status_code == 422, (body, r.text)
        assert needle in r.text, (body, r.text)
        assert r.json()["detail"][0]["loc"][:3] == ["body", "scores", 1], r.text
    huge = httpx.post(base + "/api/scores", content=b'{"name": "x", "value": 1e400, "session_id": "s"}',
                      headers={"content-type": "application/json"})
    assert huge.status_code == 422, huge.text
    assert scores_server.store.wait_loaded(10)
    assert get_scores(base) == []
