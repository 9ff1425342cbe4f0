"""Numeric, boolean and categorical scores on a run, a span and a session come back from GET
/api/scores exactly as sent, with the run's agent/version/mode joined from its stored run (and none
for a session score), and every filter returns exactly the matching scores.

The failure this covers: a value stored in one column and read back as another type (a boolean read
as 1.0, a label lost), or a score missing its run's agent because it arrived before the spans."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import RunSpec
from tests.ingest.scores.conftest import get_scores, post_scores, send_runs

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store

AT = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)


def test_each_type_and_target_round_trips(scores_server: Any) -> None:
    base = scores_server.http_url
    trace = "0123456789abcdef0123456789abcdef"
    batch = [
        {"name": "helpfulness", "value": 0.75, "trace_id": trace, "comment": "mostly right", "author": "ana",
         "source": "human", "created_at": AT.isoformat()},
        {"name": "correct", "value": False, "trace_id": trace, "source": "judge", "author": "gpt-judge",
         "created_at": (AT + timedelta(seconds=1)).isoformat(), "metadata": {"reason": "wrong city"}},
        {"name": "tone", "value": "polite", "trace_id": trace, "span_id": "00000000000000ab", "source": "rule",
         "created_at": (AT + timedelta(seconds=2)).isoformat()},
        {"name": "resolved", "value": True, "session_id": "conv-42", "source": "client", "author": "end-user-7",
         "created_at": (AT + timedelta(seconds=3)).isoformat()},
        {"name": "rating", "value": 4, "data_type": "numeric", "trace_id": trace, "source": "api",
         "created_at": (AT + timedelta(seconds=4)).isoformat()},
    ]
    # the scores arrive BEFORE their run's spans: agent/version are joined when read
    r = post_scores(base, {"scores": batch})
    assert r.status_code == 200, r.text
    assert r.json()["accepted"] == 5 and len(set(r.json()["score_ids"])) == 5
    run = send_runs(base, [RunSpec(agent="ticket", version="2.1")])[0]
    # re-target the run scores at the run that now exists
    for item in batch:
        if "trace_id" in item:
            item["trace_id"] = run.trace_id
    assert post_scores(base, batch).status_code == 200
    assert scores_server.store.wait_loaded(10)

    rows = {(s["name"], s["trace_id"]): s for s in get_scores(base, limit=100)}
    got = {name: s for (name, tid), s in rows.items() if tid in (run.trace_id, None)}
    assert got["helpfulness"]["value"] == 0.75 and got["helpfulness"]["data_type"] == "numeric"
    assert got["helpfulness"]["comment"] == "mostly right" and got["helpfulness"]["author"] == "ana"
    assert got["correct"]["value"] is False and got["correct"]["data_type"] == "boolean"
    assert got["correct"]["metadata"] == {"reason": "wrong city"}
    assert got["tone"]["value"] == "polite" and got["tone"]["span_id"] == "00000000000000ab"
    assert got["resolved"]["value"] is True and got["resolved"]["session_id"] == "conv-42"
    assert got["resolved"]["agent"] is None and got["resolved"]["trace_id"] is None
    assert got["rating"]["value"] == 4.0
    assert {s["source"] for s in got.values()} == {"human", "judge", "rule", "client", "api"}
    for name in ("helpfulness", "correct", "tone", "rating"):
        assert (got[name]["agent"], got[name]["version"]) == ("ticket", "2.1"), name
    assert datetime.fromisoformat(got["helpfulness"]["created_at"]) == AT

    # the scores sent before the run exist too (their own trace id), with no agent
    early = get_scores(base, trace_id=trace)
    assert {s["name"] for s in early} == {"helpfulness", "correct", "tone", "rating"}
    assert all(s["agent"] is None for s in early)

    assert {s["name"] for s in get_scores(base, trace_id=run.trace_id)} == {"helpfulness", "correct", "tone", "rating"}
    assert [s["name"] for s in get_scores(base, span_id="00000000000000ab", trace_id=run.trace_id)] == ["tone"]
    assert [s["name"] for s in get_scores(base, session_id="conv-42")] == ["resolved"]
    assert {s["trace_id"] for s in get_scores(base, name="correct")} == {trace, run.trace_id}
    assert {s["name"] for s in get_scores(base, source="judge")} == {"correct"}
    assert {s["name"] for s in get_scores(base, author="ana")} == {"helpfulness"}
    assert {s["trace_id"] for s in get_scores(base, agent="ticket")} == {run.trace_id}
    assert get_scores(base, agent="ticket", version="9.9") == []
    assert {s["name"] for s in get_scores(base, since=(AT + timedelta(seconds=3)).isoformat())} == {"resolved", "rating"}
    assert {s["name"] for s in get_scores(base, until=(AT + timedelta(seconds=1)).isoformat())} == {"helpfulness"}


def test_paging_returns_every_score_once_newest_first(scores_server: Any) -> None:
    base = scores_server.http_url
    batch = [{"name": f"s{i % 7}", "value": i, "trace_id": f"{i:032x}", "created_at": (AT + timedelta(
        seconds=i // 3)).isoformat()} for i in range(250)]
    assert post_scores(base, batch).status_code == 200
    assert scores_server.store.wait_loaded(10)
    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 40, **({"cursor": cursor} if cursor else {})}
        page = httpx.get(base + "/api/scores", params=params).json()
        seen += page["scores"]
        cursor = page["next"]
        if cursor is None:
            break
    assert sorted(s["value"] for s in seen) == list(range(250))
    times = [s["created_at"] for s in seen]
    assert times == sorted(times, reverse=True)
    assert httpx.get(base + "/api/scores", params={"cursor": "not-a-cursor"}).status_code == 400
