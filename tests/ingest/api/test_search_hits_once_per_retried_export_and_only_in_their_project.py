"""On both stores, from the same OTLP bytes: a retried export is one hit and no extra document; a key
reads the hits of its own project only (in /api/search and in `search()` filters) even when another
project holds the same words; a reindex rebuilds the documents from the stored spans, same count and
same answers; and the two stores return the same hits in the same order."""

from __future__ import annotations

import functools

import pytest

from ingest.config import ApiKey
from tests.ingest.api.content_runs import ContentRun, ToolCall, emit, wait_indexed
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter

WINDOW = {"since": "2000-01-01T00:00:00Z"}
KEY_A, KEY_B = "search-key-a-0123456789", "search-key-b-0123456789"
OPS = "search-operator-key-0123456789"
KEYS = [ApiKey(key=KEY_A, project="A"), ApiKey(key=KEY_B, project="B"),
        ApiKey(key=OPS, project="ops", scopes=["operator"])]  # fmt: skip
ANSWERS: dict[tuple, dict[str, list]] = {}


@functools.cache
def _requests():
    """Project A's and B's runs as OTLP requests, made once so both stores get the same ids."""
    a, b = Emitter(), Emitter()
    runs_a = [emit(a, ContentRun("ops", "the numbat ate termites", calls=[ToolCall("dig", {"depth": 2},
                                                                                   result="numbat burrow found")])),
              emit(a, ContentRun("ops", "a quiet numbat"))]  # fmt: skip
    runs_b = [emit(b, ContentRun("ops", "numbat numbat numbat in project b"))]
    return a.request(), runs_a, b.request(), runs_b


def _hits(server, key, q, **params):
    r = server.get("/api/search", key, q=q, **{**WINDOW, **params})
    assert r.status_code == 200, r.text
    hits = [(h["project"], h["trace_id"], h["span_id"], h["field"]) for h in r.json()["results"]]
    seen = ANSWERS.setdefault((key, q, repr(sorted(params.items()))), {})
    seen[server.store.name] = hits
    if len(seen) == len(BACKENDS):
        assert seen["duckdb"] == seen["clickhouse"], (key, q, params)
    return hits


def _run_ids(server, key, expression):
    r = server.get("/api/runs", key, filter=expression, **WINDOW)
    assert r.status_code == 200, r.text
    return {x["trace_id"] for x in r.json()["runs"]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_retried_export_is_one_hit_and_keys_read_only_their_project(make_server, backend):
    server = make_server(api_keys=KEYS)
    request_a, runs_a, request_b, runs_b = _requests()
    server.send(request_a, KEY_A)
    server.send(request_b, KEY_B)
    wait_indexed(server, OPS)
    documents = server.get("/api/search/status", OPS).json()["documents"]
    # each run's task and answer; the tool call's arguments and result; the step's thought
    assert documents == 2 * 3 + 2 + 1
    server.send(request_a, KEY_A)  # the client's retry: the same spans again
    wait_indexed(server, OPS)
    assert server.get("/api/search/status", OPS).json()["documents"] == documents

    hits_a = _hits(server, KEY_A, "numbat")
    assert {h[1] for h in hits_a} == {r.trace_id for r in runs_a} and {h[0] for h in hits_a} == {"A"}
    assert len(hits_a) == len(set(hits_a)) == 3  # one hit per span: the retry added none
    assert [h[1] for h in _hits(server, KEY_B, "numbat")] == [runs_b[0].trace_id]
    assert _hits(server, KEY_A, "numbat", project="B") == []  # a key never widens to another project
    assert _hits(server, KEY_B, "termites") == []
    assert _run_ids(server, KEY_A, 'search("numbat")') == {r.trace_id for r in runs_a}
    assert _run_ids(server, KEY_B, 'search("numbat")') == {runs_b[0].trace_id}
    assert _run_ids(server, KEY_B, 'search("burrow")') == set()
    everything = _hits(server, OPS, "numbat")
    assert [h[1] for h in everything][0] == runs_b[0].trace_id  # the operator reads both; B's is densest
    assert server.get("/api/search/status", KEY_A).json()["documents"] is None  # the count is the operator's


@pytest.mark.parametrize("backend", BACKENDS)
def test_reindex_rebuilds_the_same_documents_from_the_stored_spans(make_server, backend):
    server = make_server(api_keys=KEYS)
    request_a, runs_a, request_b, runs_b = _requests()
    server.send(request_a, KEY_A)
    server.send(request_b, KEY_B)
    before = wait_indexed(server, OPS)
    answer_before = _hits(server, OPS, "numbat")
    with server.client(KEY_A) as client:
        assert client.post("/api/search/reindex").status_code == 403
    with server.client(OPS) as client:
        started = client.post("/api/search/reindex")
    assert started.status_code == 200, started.text
    assert started.json()["started"] is True
    after = wait_indexed(server, OPS)
    assert after["built_at"] is not None and after["documents"] == before["documents"] == 9
    assert _hits(server, OPS, "numbat") == answer_before
    assert [h[1] for h in _hits(server, KEY_A, "burrow")] == [runs_a[0].trace_id]
