"""The demo used to stamp every run within the same minute: the charts were one bar, the release
and drift comparisons had nothing to compare, and no alert could fire. A 14-day history sent
through real OTLP to a real server (built-in alert rules on, as `steplens serve` starts) must give
runs on every day with their spans moved together, the gradual ops v2 release flagged by the
release comparison and the built-in rules, the ticket creep flagged by drift inside its week, the
control agent (planner) flagged by nothing, the outage hour as an `llm_unavailable` cluster
at its time, and the judge's and reviewer's scores with the ops v2 quality drop found by the release
comparison and the built-in score rule."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from ingest.config import Settings
from kernel.examples.demo import DemoSummary, run_demo
from kernel.examples.history import CREEP_AGENT, RELEASED_AGENT, Story
from tests.ingest.conftest import RunningServer, _ServerThread

pytestmark = pytest.mark.timeout(300)

RUNS = 700
DAYS = 14
SEED = 0
CONTROL = "planner"  # the agent with no planted change


@dataclass
class History:
    server: RunningServer
    summary: DemoSummary
    story: Story
    runs: list[dict]

    def get(self, path: str, **params: object) -> dict:
        response = httpx.get(self.server.http_url + path, params=params, timeout=60)
        return response.raise_for_status().json()


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(UTC)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    db: Path = tmp_path_factory.mktemp("history") / "steplens.duckdb"
    thread = _ServerThread(Settings(db=db, host="127.0.0.1", normalize_processes=0))
    server = thread.start()
    try:
        summary = run_demo(server.http_url, RUNS, seed=SEED, concurrency=32, progress=False, days=DAYS)
        assert summary.export_complete, summary
        assert server.store.wait_loaded(60)
        assert summary.story is not None
        runs: list[dict] = []
        cursor = None
        while True:
            params = {"limit": 1000, "mode": "all", **({"cursor": cursor} if cursor else {})}
            page = httpx.get(f"{server.http_url}/api/runs", params=params, timeout=30).raise_for_status().json()
            runs += page["runs"]
            if not (cursor := page["next"]):
                break
        yield History(server, summary, summary.story, runs)
    finally:
        thread.stop()


def test_every_day_of_the_history_has_runs_and_none_lie_outside_it(history: History) -> None:
    story, runs = history.story, history.runs
    assert len(runs) == RUNS
    starts = [_when(r["start_time"]) for r in runs]
    assert story.start <= min(starts) and max(starts) < story.end + timedelta(minutes=2)
    per_day = Counter((story.end - t) // timedelta(days=1) for t in starts)
    assert all(per_day[day] > 0 for day in range(DAYS)), per_day
    # a daily shape: the quietest hour of the day carries far fewer runs than the busiest
    by_hour = Counter(t.hour for t in starts)
    assert min(by_hour.get(h, 0) for h in range(24)) * 3 < max(by_hour.values()), by_hour


def test_a_backdated_run_keeps_its_spans_inside_it_with_their_measured_durations(history: History) -> None:
    old = min(history.runs, key=lambda r: r["start_time"])
    trace = history.get(f"/api/traces/{old['trace_id']}")
    spans = trace["spans"]
    run_start, run_end = _when(old["start_time"]), _when(old["end_time"])
    assert run_start < history.story.start + timedelta(days=1)  # really two weeks ago
    assert len(spans) > 3
    for span in spans:
        start, end = _when(span["start_time"]), _when(span["end_time"])
        assert run_start <= start <= end <= run_end, span
    assert (run_end - run_start) < timedelta(seconds=30)  # measured, not stretched by the shift


def test_eval_and_shadow_runs_are_stored_with_their_mode(history: History) -> None:
    modes = Counter(r["mode"] for r in history.runs)
    assert modes == Counter(history.summary.modes), modes
    assert modes["eval"] > 0 and modes["shadow"] > 0
    assert {r["agent"] for r in history.runs if r["mode"] != "live"} == {RELEASED_AGENT}
    # live figures leave them out unless asked for
    live = history.get("/api/overview", since="30d")["totals"]["runs"]
    every = history.get("/api/overview", since="30d", mode="all")["totals"]["runs"]
    assert live == modes["live"] and every == len(history.runs)


def test_the_gradual_v2_release_is_flagged_by_the_release_comparison(history: History) -> None:
    report = history.get("/api/regressions", comparison="release")
    flagged = [f for f in report["findings"] if f["flagged"]]
    steps = [f for f in flagged if f["metric"] == "steps"]
    assert [f["agent"] for f in steps] == [RELEASED_AGENT], report
    assert steps[0]["verdict"] == "regression" and steps[0]["current"]["label"] == "version v2"
    assert {f["agent"] for f in flagged} == {RELEASED_AGENT}
    # rolled out gradually: a share of the ops traffic first, then all of it
    partial, full = history.story.rollout
    live_ops = [r for r in history.runs if r["agent"] == RELEASED_AGENT and r["mode"] == "live"]
    during = [r["version"] for r in live_ops if partial <= _when(r["start_time"]) < full]
    after = [r["version"] for r in live_ops if _when(r["start_time"]) >= full]
    assert "v1" in during and "v2" in during and set(after) == {"v2"}


def test_the_creep_is_flagged_by_drift_inside_its_week_and_the_control_is_not(history: History) -> None:
    drift = {d["agent"]: d for d in history.get("/api/regressions", comparison="drift", since="28d")["drift"]}
    creep = drift[CREEP_AGENT]
    assert creep["flagged"] and creep["verdict"] == "drift_up", creep
    first_alarm = _when(creep["first_alarm"])
    assert history.story.creep_start - timedelta(days=1) <= first_alarm <= history.story.end, creep
    assert not drift[CONTROL]["flagged"], drift[CONTROL]


def test_builtin_rules_fire_for_the_planted_changes_and_not_for_the_control(history: History) -> None:
    rules = history.get("/api/alerts")["rules"]
    assert len(rules) == 6 and all(r["builtin"] for r in rules)
    check = httpx.post(f"{history.server.http_url}/api/alerts/check", timeout=120).raise_for_status().json()
    assert check["errors"] == {}
    firing: dict[str, set[str]] = {}
    for state in check["firing"]:
        firing.setdefault(state["rule"], set()).add(state["subject"])
    release = next(n for n in firing if n.startswith("steps per run: new release"))
    drift = next(n for n in firing if n.startswith("steps per run drift"))
    assert firing[release] == {RELEASED_AGENT}
    assert CREEP_AGENT in firing[drift]
    scores = next(n for n in firing if n.startswith("scores: new release"))
    assert {f"{RELEASED_AGENT} score:correct", f"{RELEASED_AGENT} score:helpfulness"} <= firing[scores]
    planted = {RELEASED_AGENT, CREEP_AGENT}
    # a subject is the agent, or "agent score:NAME" for the rule over every score
    assert all({s.split(" ")[0] for s in subjects} <= planted for subjects in firing.values()), firing


def test_judge_and_reviewer_scores_cover_the_history_and_ops_v2_is_judged_worse(history: History) -> None:
    assert history.summary.scores_error is None and history.summary.scores_posted > 2 * RUNS
    configs = {c["name"]: c for c in history.get("/api/score-configs")["configs"]}
    assert configs["tone"]["categories"] == ["friendly", "neutral", "curt"] and configs["correct"]["data_type"] == "boolean"
    sources = {s["name"]: s["source"] for s in history.get("/api/scores", limit=1000)["scores"]}
    assert sources == {"helpfulness": "judge", "tone": "judge", "correct": "human"}
    report = history.get("/api/regressions", comparison="release", metrics="score:correct,score:helpfulness")
    flagged = {(f["agent"], f["metric"]): f for f in report["findings"] if f["flagged"]}
    assert set(flagged) == {(RELEASED_AGENT, "score:correct"), (RELEASED_AGENT, "score:helpfulness")}, report
    assert all(f["verdict"] == "regression" for f in flagged.values())
    assert flagged[(RELEASED_AGENT, "score:correct")]["test"] == "two_proportion_z"
    assert flagged[(RELEASED_AGENT, "score:helpfulness")]["test"] == "mann_whitney_u"


def test_the_outage_hour_is_a_failure_cluster_at_its_time(history: History) -> None:
    begin, end = history.story.outage
    failures = history.get("/api/failures", since=(history.story.start - timedelta(hours=1)).isoformat())
    outage = [c for c in failures["clusters"] if c["stop_reason"] == "llm_unavailable"]
    assert sum(c["count"] for c in outage) >= 5, failures["clusters"]
    for cluster in outage:
        assert begin <= _when(cluster["first_seen"]) and _when(cluster["last_seen"]) < end + timedelta(minutes=1)


def test_the_carrier_tool_answers_twice_as_slowly_after_its_date(history: History) -> None:
    change = history.story.latency_change

    def p50_ms(**window: str) -> float:
        tools = history.get("/api/tools", agent="ticket", **window)["tools"]
        return next(t for t in tools if t["tool"] == "query_logistics")["p50_ms"]

    before = p50_ms(since=(history.story.start - timedelta(hours=1)).isoformat(), until=change.isoformat())
    after = p50_ms(since=change.isoformat())
    assert before >= 300 and after > 1.4 * before, (before, after)


def test_the_failed_runs_queue_holds_the_sampled_failures_with_two_reviewers_labels(history: History) -> None:
    from kernel.examples.demo_queue import QUEUE, REVIEWERS, labelled_count
    from tests.ingest.queues.harness import expected_in_sample, wait_for

    queued = history.summary.queue
    assert queued is not None and queued.error is None
    labelled = labelled_count(queued.added)
    assert labelled > 0 and queued.labelled == 2 * labelled
    loaded = datetime.now(UTC)

    def passed() -> bool:  # a live pass after everything was loaded: late-loaded failures are in too
        last = history.get(f"/api/queues/{QUEUE}")["last_fill"]
        return last is not None and _when(last) > loaded

    wait_for(passed, timeout=30, what="a live pass of the demo queue")
    failed = {r["trace_id"] for r in history.runs if r["ok"] is False and (r["mode"] or "live") == "live"}
    expected = {t for t in failed if expected_in_sample("default", QUEUE, t, 0.5)}
    items = history.get(f"/api/queues/{QUEUE}/items", limit=1000)["items"]
    assert {i["trace_id"] for i in items} == expected and len(items) > labelled
    results = history.get(f"/api/queues/{QUEUE}/results")
    assert results["labelled_by"] == dict.fromkeys(REVIEWERS, labelled)
    correct = next(c for c in results["agreement"] if c["name"] == "correct")
    assert correct["runs_with_several_labels"] == labelled and 0.5 <= correct["percent_agreement"] <= 1.0


def test_the_partial_rollout_is_a_gray_release_sticky_per_user_with_linked_shadows(history: History) -> None:
    from kernel.examples.demo_release import RELEASE_NAME

    routed = [r for r in history.runs if r["release_name"] == RELEASE_NAME and r["mode"] == "live"]
    partial, full = history.story.rollout
    assert routed and all(partial <= _when(r["start_time"]) < full for r in routed)
    assert {(r["release_cohort"], r["version"]) for r in routed} == {("stable", "v1"), ("candidate", "v2")}
    versions_of: dict[str, set[str]] = {}
    for r in routed:
        versions_of.setdefault(r["user_id"], set()).add(r["version"])
    assert all(len(v) == 1 for v in versions_of.values()), versions_of  # a user never switches version
    mirrors = [r for r in history.runs if r["release_cohort"] == "shadow"]
    live_ids = {r["trace_id"] for r in routed}
    assert mirrors and all(r["mode"] == "shadow" and r["version"] == "v2" for r in mirrors)
    assert {r["release_primary_trace_id"] for r in mirrors} <= live_ids
    report = history.get("/api/regressions", comparison="cohort", since="30d")
    steps = [f for f in report["findings"] if f["release"] == RELEASE_NAME and f["metric"] == "steps"]
    assert steps and steps[0]["current"]["n"] + steps[0]["baseline"]["n"] == len(routed)
