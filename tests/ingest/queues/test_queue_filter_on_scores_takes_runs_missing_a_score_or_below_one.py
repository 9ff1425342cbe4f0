"""A queue's score conditions: `score_missing` takes only runs without a score of that name (so a
queue of unlabelled runs skips those an evaluator or a person already scored), `score_below` only
runs whose latest score of that name is under the value (a corrected score counts, not the first)."""

from __future__ import annotations

import httpx
import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter
from tests.ingest.queues.harness import Api, emit_runs, settle


@pytest.mark.parametrize("backend", BACKENDS)
def test_score_missing_and_score_below_select_by_the_runs_scores(queue_server) -> None:
    srv = queue_server()
    api = Api(srv.http_url)
    emitter = Emitter()
    runs = [r.trace_id for r in emit_runs(emitter, 12)]  # emitted, not sent yet
    scored, unscored = runs[:6], runs[6:]
    scores = [{"name": "helpfulness", "value": v, "trace_id": t, "source": "judge", "author": "judge-1"}
              for t, v in zip(scored, (1, 2, 5, 4, 2, 5), strict=True)]
    # a later score of another author corrects run 0 upwards, and run 2 downwards
    scores += [{"name": "helpfulness", "value": 5, "trace_id": scored[0], "source": "human", "author": "ann",
                "created_at": "2030-01-01T00:00:00Z"},
               {"name": "helpfulness", "value": 1, "trace_id": scored[2], "source": "human", "author": "ann",
                "created_at": "2030-01-01T00:00:00Z"}]
    r = httpx.post(srv.http_url + "/api/scores", json=scores, timeout=30)
    assert r.status_code == 200, r.text
    assert srv.store.wait_loaded(30)
    api.create("unlabelled", filter={"score_missing": "helpfulness"})
    api.create("unhelpful", score_configs=["helpfulness"], filter={"score_below": {"name": "helpfulness", "value": 3}})
    api.send(emitter)
    settle(api, "unlabelled", srv.store)
    settle(api, "unhelpful", srv.store)
    assert {i["trace_id"] for i in api.items("unlabelled")} == set(unscored)
    assert {i["trace_id"] for i in api.items("unhelpful")} == {scored[1], scored[2], scored[4]}
