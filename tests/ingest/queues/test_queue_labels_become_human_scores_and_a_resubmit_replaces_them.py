"""A person's labels in a queue become scores (source human, author = the person) visible in
GET /api/scores; submitting again replaces them (the same ids) instead of adding more; a label that
breaks its config is 422 naming it, stores nothing and leaves the item open; a skip writes no score;
a queue naming a config that does not exist is refused."""

from __future__ import annotations

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter
from tests.ingest.queues.harness import Api, emit_runs, settle


def _scores(api: Api, trace_id: str) -> list[dict]:
    return api.ok("GET", "/api/scores", params={"trace_id": trace_id})["scores"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_labels_are_scores_and_resubmitting_replaces_them(queue_server) -> None:
    srv = queue_server()
    api = Api(srv.http_url)
    api.create("triage", score_configs=["correct", "helpfulness", "tone"])
    emitter = Emitter()
    runs = emit_runs(emitter, 3)
    api.send(emitter)
    assert settle(api, "triage", srv.store) == 3

    taken = api.ok("GET", "/api/queues/triage/next", params={"user": "alice"})
    trace_id = taken["item"]["trace_id"]
    assert trace_id in {r.trace_id for r in runs}
    assert taken["item"]["status"] == "in_progress" and taken["item"]["held_by"] == ["alice"]
    again = api.ok("GET", "/api/queues/triage/next", params={"user": "alice"})
    assert again["item"]["trace_id"] == trace_id, "asking again gave another item"

    bad = api.call("POST", f"/api/queues/triage/items/{trace_id}/submit",
                   json={"user": "alice", "scores": {"correct": True, "tone": "sarcastic"}})
    assert bad.status_code == 422 and "tone" in bad.text and "sarcastic" in bad.text
    unknown = api.call("POST", f"/api/queues/triage/items/{trace_id}/submit",
                       json={"user": "alice", "scores": {"latency": 3}})
    assert unknown.status_code == 422 and "latency" in unknown.text
    assert srv.store.wait_loaded(30)
    assert _scores(api, trace_id) == []
    assert api.ok("GET", "/api/queues/triage/items", params={"status": "in_progress"})["items"][0]["trace_id"] == trace_id

    done = api.ok("POST", f"/api/queues/triage/items/{trace_id}/submit",
                  json={"user": "alice", "scores": {"correct": False, "helpfulness": 2, "tone": "rude"},
                        "comment": "wrong carrier"})
    assert done["status"] == "done" and done["held_by"] == []
    assert [(d["user"], d["decision"], d["values"]) for d in done["decisions"]] == [
        ("alice", "labelled", {"correct": False, "helpfulness": 2, "tone": "rude"})]
    assert srv.store.wait_loaded(30)
    stored = {s["name"]: s for s in _scores(api, trace_id)}
    assert set(stored) == {"correct", "helpfulness", "tone"}
    assert all(s["source"] == "human" and s["author"] == "alice" and s["comment"] == "wrong carrier"
               and s["metadata"] == {"queue": "triage"} for s in stored.values())
    assert (stored["correct"]["value"], stored["helpfulness"]["value"], stored["tone"]["value"]) == (False, 2, "rude")
    assert {n: s["score_id"] for n, s in stored.items()} == done["decisions"][0]["score_ids"]

    changed = api.ok("POST", f"/api/queues/triage/items/{trace_id}/submit",
                     json={"user": "alice", "scores": {"correct": True, "helpfulness": 4, "tone": "polite"}})
    assert changed["decisions"][0]["score_ids"] == done["decisions"][0]["score_ids"]
    assert srv.store.wait_loaded(30)
    after = {s["name"]: s["value"] for s in _scores(api, trace_id)}
    assert after == {"correct": True, "helpfulness": 4, "tone": "polite"}, "a resubmission added scores"

    nxt = api.ok("GET", "/api/queues/triage/next", params={"user": "alice"})["item"]["trace_id"]
    assert nxt != trace_id
    skipped = api.ok("POST", f"/api/queues/triage/items/{nxt}/skip", json={"user": "alice"})
    assert skipped["status"] == "skipped"
    assert srv.store.wait_loaded(30)
    assert _scores(api, nxt) == []
    progress = api.ok("GET", "/api/queues/triage")["progress"]
    assert progress == {"total": 3, "pending": 1, "in_progress": 0, "done": 1, "skipped": 1}
    last = api.ok("GET", "/api/queues/triage/next", params={"user": "alice"})["item"]["trace_id"]
    api.ok("POST", f"/api/queues/triage/items/{last}/submit", json={"user": "alice", "scores": {"correct": True}})
    assert api.ok("GET", "/api/queues/triage/next", params={"user": "alice"})["item"] is None


def test_a_queue_of_unknown_configs_or_a_bad_definition_is_refused(queue_server) -> None:
    api = Api(queue_server().http_url)
    missing = api.call("POST", "/api/queues", json={"name": "q", "score_configs": ["vibes"]})
    assert missing.status_code == 422 and "vibes" in missing.text
    for body, word in (({"name": "q", "score_configs": ["correct"], "sampling_rate": 1.5}, "sampling_rate"),
                       ({"name": "q", "score_configs": ["correct"], "filter": {"agnet": "x"}}, "agnet"),
                       ({"name": "bad name!", "score_configs": ["correct"]}, "name"),
                       ({"name": "q", "score_configs": []}, "score_configs"),
                       ({"name": "q", "score_configs": ["correct"], "labels_per_item": 3, "assignees": ["a"]},
                        "labels_per_item")):
        r = api.call("POST", "/api/queues", json=body)
        assert r.status_code == 422 and word in r.text, (body, r.text)
    api.create("q")
    assert api.call("POST", "/api/queues", json={"name": "q", "score_configs": ["correct"]}).status_code == 409
