"""Keyset paging over every sort field and order: each run appears exactly once, in order.

Many runs share a sort value (ties on cost, steps and tokens; NULL-free here but equal values), which
is where offset-free paging usually skips or repeats rows at page boundaries.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec

SORTS = ["start_time", "duration_ms", "cost_usd", "steps", "input_tokens"]


@pytest.fixture
def loaded(server):
    emitter = Emitter()
    specs = []
    for i in range(23):
        specs.append(
            emitter.run(
                RunSpec(
                    start=T0 + timedelta(seconds=i // 2),  # pairs share a start time
                    steps=1 + i % 3,
                    cost_per_step=0.001 * (1 + i % 2),
                    duration=timedelta(milliseconds=500 + 100 * (i % 4)),
                    agent=f"agent{i % 2}",
                )
            )
        )
    server.send(emitter.request())
    return server, specs


def _page_all(server, **params):
    seen, cursor, pages = [], None, 0
    while True:
        r = server.get("/api/runs", limit=4, cursor=cursor, **params)
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["runs"]) <= 4
        seen.extend(body["runs"])
        pages += 1
        cursor = body["next"]
        if cursor is None:
            return seen, pages
        assert pages < 50, "paging does not terminate"


@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_sort_pages_through_all_runs_once_in_order(loaded, order):
    server, specs = loaded
    expected_ids = {s.trace_id for s in specs}
    for sort in SORTS:
        runs, pages = _page_all(server, sort=sort, order=order)
        ids = [r["trace_id"] for r in runs]
        assert len(ids) == len(set(ids)), f"{sort}: duplicates across pages"
        assert set(ids) == expected_ids, f"{sort}: skipped runs"
        assert pages == 6  # 23 runs, 4 per page
        values = [r[sort] for r in runs]
        assert values == sorted(values, reverse=order == "desc"), f"{sort} {order}: out of order"


@pytest.mark.parametrize("backend", BACKENDS)
def test_default_is_newest_first_with_limit_50(loaded):
    server, specs = loaded
    body = server.get("/api/runs").json()
    assert body["next"] is None
    starts = [r["start_time"] for r in body["runs"]]
    assert starts == sorted(starts, reverse=True)
    assert len(body["runs"]) == len(specs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_last_full_page_has_no_next_cursor(loaded):
    server, specs = loaded
    first = server.get("/api/runs", limit=20).json()
    rest = server.get("/api/runs", limit=20, cursor=first["next"]).json()
    assert len(rest["runs"]) == 3 and rest["next"] is None
    exact = server.get("/api/runs", limit=len(specs)).json()
    assert len(exact["runs"]) == len(specs) and exact["next"] is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_cursor_survives_new_runs_arriving_between_pages(server):
    emitter = Emitter()
    old = [emitter.run(RunSpec(start=T0 + timedelta(minutes=i))) for i in range(6)]
    server.send(emitter.request())
    first = server.get("/api/runs", limit=3).json()
    newer = [emitter.run(RunSpec(start=T0 + timedelta(hours=1, minutes=i))) for i in range(2)]
    server.send(emitter.request())
    second = server.get("/api/runs", limit=3, cursor=first["next"]).json()
    got = [r["trace_id"] for r in first["runs"] + second["runs"]]
    assert got == [s.trace_id for s in reversed(old)]
    assert not {s.trace_id for s in newer} & set(got)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cursor_is_refused_for_another_sort_or_when_tampered(loaded):
    server, _ = loaded
    cursor = server.get("/api/runs", limit=2).json()["next"]
    r = server.get("/api/runs", limit=2, cursor=cursor, sort="cost_usd")
    assert r.status_code == 400 and "sort" in r.json()["detail"]
    for bad in ["not-a-cursor!", "e30", cursor[:-5], "AAAA"]:
        r = server.get("/api/runs", cursor=bad)
        assert r.status_code == 400, (bad, r.text)
        assert "cursor" in r.json()["detail"]
