"""The Runs page shows each run's latest scores in one column, the Overview page the range's scores
per agent and version, and the Trace page has a Scores panel: every score of the trace (a reviewer's label, a judge's
verdict with its reason, a client's evaluation event, an end user's feedback on a span) with its
value, source, author, comment and time, oldest first; a comment that looks like Markdown is shown
as the text it is.

The failure this covers: scores stored and queryable but invisible to the person reading the run."""

from __future__ import annotations

import httpx
import pytest

from tests.dashboards.conftest import open_page
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import RunSpec
from tests.ingest.scores.conftest import post_scores, send_runs

# the pages only call the API: each runs against a server on either store
pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def test_scores_panel(start_ingest_server, ui_env) -> None:
    server = start_ingest_server(grpc_port=0)
    run = send_runs(server.http_url, [RunSpec(agent="ticket", version="2")])[0]
    assert server.store.wait_loaded(10)
    root = httpx.get(f"{server.http_url}/api/traces/{run.trace_id}").json()["spans"][0]["span_id"]
    batch = [
        {"name": "correct", "value": False, "trace_id": run.trace_id, "source": "judge", "author": "judge-model",
         "comment": "**wrong** city [x](http://evil)", "created_at": "2026-03-01T10:00:00Z"},
        {"name": "helpfulness", "value": 0.8, "trace_id": run.trace_id, "source": "human", "author": "ana",
         "created_at": "2026-03-01T10:05:00Z"},
        {"name": "tone", "value": "polite", "trace_id": run.trace_id, "span_id": root, "source": "client",
         "author": "u-7", "created_at": "2026-03-01T10:10:00Z"},
    ]
    assert post_scores(server.http_url, batch).status_code == 200
    assert server.store.wait_loaded(10)

    ui_env(server.http_url)
    at = open_page("trace", {"trace_id": run.trace_id})
    assert not at.exception
    assert any(m.value == "**Scores**" for m in at.markdown)
    table = next(df.value for df in at.dataframe if "score" in df.value.columns and "author" in df.value.columns)
    assert list(table["score"]) == ["correct", "helpfulness", "tone"]
    assert list(table["value"]) == ["false", "0.8", "polite"]
    assert list(table["source"]) == ["judge", "human", "client"]
    assert list(table["author"]) == ["judge-model", "ana", "u-7"]
    assert table["comment"][0] == "**wrong** city [x](http://evil)"  # a text cell, not Markdown
    assert table["span"][2] == root and table["span"].isna()[0]


def test_runs_page_scores_column(start_ingest_server, ui_env) -> None:
    server = start_ingest_server(grpc_port=0)
    scored, unscored = send_runs(server.http_url, [RunSpec(agent="ticket"), RunSpec(agent="ops")])
    body = [{"name": "correct", "value": True, "trace_id": scored.trace_id},
            {"name": "stars", "value": 4, "trace_id": scored.trace_id},
            {"name": "tone", "value": "polite", "trace_id": scored.trace_id}]
    assert post_scores(server.http_url, body).status_code == 200
    assert server.store.wait_loaded(10)
    ui_env(server.http_url)
    at = open_page("runs", {"since": "all"})
    assert not at.exception
    table = next(df.value for df in at.dataframe if "scores" in df.value.columns)
    by_agent = {agent: (None if empty else text) for agent, text, empty in
                zip(table["agent"], table["scores"], table["scores"].isna(), strict=True)}
    assert by_agent == {"ticket": "correct=true · stars=4 · tone=polite", "ops": None}


def test_overview_page_scores_table(start_ingest_server, ui_env) -> None:
    """The Overview page sums the API's per-day aggregates over the range: counts, weighted mean and
    share true, label counts most frequent first."""
    from datetime import timedelta

    from tests.ingest.api.otlp_runs import T0

    server = start_ingest_server(grpc_port=0)
    day1 = send_runs(server.http_url, [RunSpec(agent="ticket", version="1", start=T0 + timedelta(minutes=i))
                                       for i in range(3)])
    day2 = send_runs(server.http_url, [RunSpec(agent="ticket", version="1", start=T0 + timedelta(days=1, minutes=i))
                                       for i in range(2)])
    runs = day1 + day2
    body = [{"name": "correct", "value": ok, "trace_id": r.trace_id} for r, ok in
            zip(runs, [True, True, False, True, False], strict=True)]
    body += [{"name": "stars", "value": v, "trace_id": r.trace_id} for r, v in zip(runs, [1, 2, 3, 4, 5], strict=True)]
    body += [{"name": "tone", "value": t, "trace_id": r.trace_id} for r, t in
             zip(runs, ["rude", "polite", "polite", "neutral", "polite"], strict=True)]
    assert post_scores(server.http_url, body).status_code == 200
    assert server.store.wait_loaded(10)
    ui_env(server.http_url)
    at = open_page("overview", {"since": "all"})
    assert not at.exception
    table = next(df.value for df in at.dataframe if "share true" in df.value.columns)
    rows = {r["score"]: r for r in table.to_dict("records")}
    assert rows["correct"]["scores"] == 5 and abs(rows["correct"]["share true"] - 0.6) < 1e-12
    assert rows["stars"]["scores"] == 5 and rows["stars"]["mean"] == 3.0
    assert rows["tone"]["labels"] == "polite 3 · neutral 1 · rude 1"
    assert {r["agent"] for r in rows.values()} == {"ticket"}
