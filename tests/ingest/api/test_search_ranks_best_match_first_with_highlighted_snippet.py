"""GET /api/search finds words in every kind of content (task, answer, thoughts, tool arguments and
results, status messages, exception text), ranks the span that is most about them first, says which
field matched, and returns the passage with the matched words marked as segments (no markup); and
`search()` works inside a filter on /api/runs and /api/spans, combined with other terms. On both
stores (DuckDB's FTS5 sidecar, ClickHouse's search_docs), with the same hits in the same order."""

from __future__ import annotations

import functools
from datetime import timedelta

import pytest

from tests.ingest.api.content_runs import ContentRun, ToolCall, emit, wait_indexed
from tests.ingest.api.harness import BACKENDS, start_server, stop_server
from tests.ingest.api.otlp_runs import T0, Emitter
from tracer import conventions as c

WINDOW = {"since": (T0 - timedelta(days=1)).isoformat()}
FILLER = " ".join(f"word{i}" for i in range(60))


# What each store answered, by test and query: the two stores must agree hit for hit.
ANSWERS: dict[tuple[str, str], dict[str, list[tuple[str, str, str]]]] = {}


@functools.cache
def _world_request():
    """The runs and their OTLP request, made once: both stores get the same bytes (the same ids)."""
    e = Emitter()
    runs = {
        "dense": ContentRun("ops", "carrier timeout: retry after the timeout", start=T0),
        "sparse": ContentRun("ops", f"{FILLER} a timeout once {FILLER}", start=T0 + timedelta(minutes=1)),
        "result": ContentRun("ops", "check the parcel", start=T0 + timedelta(minutes=2), thought="pondering quokkas",
                             answer="the parcel is in Zürich",
                             calls=[ToolCall("track", {"carrier": "wombatpost"}, result="status: delivered to locker 42")]),
        "error": ContentRun("ops", "refund", start=T0 + timedelta(minutes=3), ok=False,
                            calls=[ToolCall("refund", {"order": 9}, error="payment gateway refused: card expired")]),
    }  # fmt: skip
    for run in runs.values():
        emit(e, run)
    return e.request(), runs


@pytest.fixture(scope="module", params=BACKENDS)
def world(request, tmp_path_factory):
    server, stack, thread = start_server(tmp_path_factory.mktemp("search"), [], 10.0, request.param)
    otlp, runs = _world_request()
    server.send(otlp)
    wait_indexed(server)
    yield server, runs
    stop_server(server, stack, thread)


def _search(server, q, compare=True, **params):
    """`compare`: assert the other store's answer to the same query has the same hits in the same order."""
    r = server.get("/api/search", q=q, **{**WINDOW, **params})
    assert r.status_code == 200, r.text
    answer = r.json()
    if not compare:
        return answer
    hits = [(h["trace_id"], h["span_id"], h["field"]) for h in answer["results"]]
    seen = ANSWERS.setdefault((q, repr(sorted(params.items()))), {})
    seen[server.store.name] = hits
    if len(seen) == len(BACKENDS):  # the other store answered this query already: the same hits, best first
        assert seen["duckdb"] == seen["clickhouse"], (q, params)
    return answer


def test_denser_match_ranks_first_with_its_words_highlighted(world):
    server, runs = world
    results = _search(server, "timeout")["results"]
    assert [r["trace_id"] for r in results] == [runs["dense"].trace_id, runs["sparse"].trace_id]
    assert results[0]["score"] > results[1]["score"] > 0
    top = results[0]
    assert top["field"] == c.RUN_TASK and top["operation"] == "agent" and top["span_id"]
    assert "".join(s["text"] for s in top["snippet"]) == "carrier timeout: retry after the timeout"
    assert [s["text"] for s in top["snippet"] if s["match"]] == ["timeout", "timeout"]
    sparse = results[1]["snippet"]
    assert [s["text"] for s in sparse if s["match"]] == ["timeout"]
    assert len("".join(s["text"] for s in sparse)) < len(runs["sparse"].task)  # a passage, not the whole text
    assert _search(server, "timeout", limit=1)["results"][0]["trace_id"] == runs["dense"].trace_id


@pytest.mark.parametrize(
    ("q", "run", "field"),
    [
        ("quokkas", "result", c.STEP_THOUGHT),
        ("wombatpost", "result", c.GEN_AI_TOOL_CALL_ARGUMENTS),
        ("locker 42", "result", c.GEN_AI_TOOL_CALL_RESULT),
        ("zurich", "result", c.RUN_ANSWER),  # diacritics folded
        ("card expired", "error", "status_message"),
        ("ToolError", "error", "events"),  # the exception event's type
    ],
)
def test_every_content_field_is_searchable(world, q, run, field):
    server, runs = world
    results = _search(server, q)["results"]
    assert results, q
    assert (results[0]["trace_id"], results[0]["field"]) == (runs[run].trace_id, field)


def test_all_words_must_match_in_one_field_and_query_syntax_is_just_words(world):
    server, runs = world
    assert {r["trace_id"] for r in _search(server, "delivered locker")["results"]} == {runs["result"].trace_id}
    assert _search(server, "quokkas locker")["results"] == []  # all words within one field (thought vs result)
    assert _search(server, "parcel nonexistentword")["results"] == []
    assert _search(server, 'timeout OR "parcel" NEAR(x) body:*')["results"] == []


def test_search_inside_filters(world):
    server, runs = world

    def run_ids(expression):
        r = server.get("/api/runs", filter=expression, **WINDOW)
        assert r.status_code == 200, r.text
        return {x["trace_id"] for x in r.json()["runs"]}

    assert run_ids('search("timeout")') == {runs["dense"].trace_id, runs["sparse"].trace_id}
    assert run_ids('search("timeout") and not search("retry")') == {runs["sparse"].trace_id}
    assert run_ids('search("card expired") and ok = false') == {runs["error"].trace_id}
    assert run_ids('search("delivered") and tool_name = "track"') == {runs["result"].trace_id}
    assert run_ids('search("nothingmatchesthis")') == set()
    spans = server.get("/api/spans", filter='search("expired") and status = "ERROR"', **WINDOW).json()["spans"]
    assert [s["span_id"] for s in spans] == [runs["error"].span_ids["refund"]]
    narrowed = _search(server, "parcel", filter='operation = "agent"')["results"]
    assert {(r["trace_id"], r["operation"]) for r in narrowed} == {(runs["result"].trace_id, "agent")}
    assert _search(server, "timeout", since=(T0 + timedelta(seconds=30)).isoformat())["results"][0]["trace_id"] == (
        runs["sparse"].trace_id
    )


@functools.cache
def _many_requests():
    e = Emitter()
    dense = emit(e, ContentRun("ops", "deadline deadline deadline"))
    first = e.request()
    # newer matches, as many as the API reads candidates for one result (at least that many are ranked)
    sparse = {emit(e, ContentRun("ops", f"{FILLER} deadline {FILLER}", start=T0 + timedelta(minutes=i))).trace_id
              for i in range(1, 6)}
    return first, dense, e.request(), sparse


def test_a_word_in_very_many_documents_ranks_only_the_newest_matches(world, monkeypatch):
    """Ranking every match of a word most documents hold takes seconds at 10M spans, so only the
    RANK_WINDOW most recently indexed matches are ranked: an older, denser match drops out of the window.
    (Its own word, so the other tests' answers stay as they were; last in the module.)"""
    from ingest.search import index

    server, _ = world
    first, dense, later, sparse = _many_requests()
    server.send(first)
    wait_indexed(server)
    server.send(later)
    wait_indexed(server)
    assert _search(server, "deadline", limit=1)["results"][0]["trace_id"] == dense.trace_id
    monkeypatch.setattr(index, "RANK_WINDOW", 1)
    # which of one export's equally recent matches fills the window is each store's insertion order
    assert _search(server, "deadline", compare=False, limit=1)["results"][0]["trace_id"] in sparse
