"""Shadow, eval and replay runs were counted in every live figure: `runs.mode` was stored but no
endpoint filtered on it. Runs of each mode (live ones with and without `steplens.run.mode`, as a
foreign client sends none) go through real OTLP to a real server; every endpoint family must count
live runs by default, exactly the asked modes with `mode=`, every run with `mode=all`, and refuse an
unknown mode with a 422 naming it. Alert rules judge the modes they name (live by default)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ingest.config import Settings
from tests.ingest.api.analytics_runs import TEST_PRICES, Chat, Run, RunEmitter, Step, Tool
from tests.ingest.api.harness import BACKENDS, Server, backend_settings, not_ported
from tests.ingest.conftest import _ServerThread
from tracer import conventions as c

AGENT = "mode_agent"
# (mode sent, runs, steps per run, ok): live runs without a mode count as live.
GROUPS = [
    ("live", 2, 2, True),
    (None, 2, 2, True),
    (None, 1, 3, False),
    ("eval", 3, 4, False),
    ("shadow", 2, 2, True),
    ("replay", 1, 3, False),
]
SELECTIONS: dict[str | None, set[str] | None] = {
    None: {"live"},  # the default
    "live": {"live"},
    "eval": {"eval"},
    "shadow,replay": {"shadow", "replay"},
    "all": None,
}
RULES = [
    {"name": "steps high (live)", "kind": "threshold", "metric": "steps", "threshold": 3.5, "min_samples": 2},
    {"name": "steps high (eval)", "kind": "threshold", "metric": "steps", "threshold": 3.5, "min_samples": 2,
     "modes": ["eval"]},
]


def _runs() -> list[Run]:
    start = datetime.now(UTC) - timedelta(hours=3)
    runs = []
    for mode, count, steps, ok in GROUPS:
        for _ in range(count):
            body = [Step(chats=[Chat(cost=0.01)], tools=[Tool("search", {"q": "x"}, "found")]) for _ in range(steps - 1)]
            runs.append(Run(
                steps=[*body, Step(chats=[Chat(cost=0.02)])], agent=AGENT, ok=ok, mode=mode,
                stop_reason=c.StopReason.FINISH.value if ok else c.StopReason.MAX_STEPS.value,
                start=start + timedelta(minutes=len(runs)),
            ))  # fmt: skip
    return runs


def _selected(runs: list[Run], modes: set[str] | None) -> list[Run]:
    return [r for r in runs if modes is None or (r.mode or "live") in modes]


@pytest.fixture(scope="module", params=BACKENDS)
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp: Path = tmp_path_factory.mktemp("modes")
    prices = tmp / "prices.toml"
    prices.write_text(TEST_PRICES, encoding="utf-8")
    thread = _ServerThread(Settings(db=tmp / "steplens.duckdb", host="127.0.0.1", grpc_port=0, price_file=prices,
                                    alerts=RULES, **backend_settings(tmp, request.param)))
    running = thread.start()
    try:
        server = Server(running.http_url, running.store, running.settings)
        emitter = RunEmitter()
        runs = [emitter.run(r) for r in _runs()]
        server.send(emitter.request())
        yield server, runs
    finally:
        thread.stop()


def _get(server: Server, path: str, mode: str | None, **params: Any) -> dict[str, Any]:
    query = {"since": "1d", **params, **({"mode": mode} if mode is not None else {})}
    response = server.get(path, **query)
    assert response.status_code == 200, response.text
    return response.json()


Check = Callable[[Server, str | None, list[Run]], None]


def _overview(server: Server, mode: str | None, runs: list[Run]) -> None:
    totals = _get(server, "/api/overview", mode)["totals"]
    assert totals["runs"] == len(runs)
    assert totals["failed_runs"] == sum(not r.ok for r in runs)


def _runs_list(server: Server, mode: str | None, runs: list[Run]) -> None:
    listed = _get(server, "/api/runs", mode, limit=1000)["runs"]
    assert sorted(r["trace_id"] for r in listed) == sorted(r.trace_id for r in runs)
    assert {r["trace_id"]: r["mode"] for r in listed} == {r.trace_id: r.mode for r in runs}


def _failures(server: Server, mode: str | None, runs: list[Run]) -> None:
    failures = _get(server, "/api/failures", mode)
    assert failures["total_failed"] == sum(not r.ok for r in runs)
    assert sum(cl["count"] for cl in failures["clusters"]) == failures["total_failed"]


def _tools(server: Server, mode: str | None, runs: list[Run]) -> None:
    tools = {t["tool"]: t for t in _get(server, "/api/tools", mode)["tools"]}
    calls = sum(len(r.steps) - 1 for r in runs)
    assert (tools["search"]["calls"] if tools else 0) == calls


def _cost(server: Server, mode: str | None, runs: list[Run]) -> None:
    by_model = _get(server, "/api/cost", mode, group_by="model")
    assert sum(row["llm_calls"] for row in by_model["rows"]) == sum(len(r.steps) for r in runs)
    expected = sum(0.01 * (len(r.steps) - 1) + 0.02 for r in runs)
    assert by_model["total_cost_usd"] == pytest.approx(expected)
    by_agent = _get(server, "/api/cost", mode, group_by="agent")
    assert sum(row["runs"] for row in by_agent["rows"]) == len(runs)
    by_tool = _get(server, "/api/cost", mode, group_by="tool")
    assert sum(row["runs"] for row in by_tool["rows"]) == len(runs)


def _models(server: Server, mode: str | None, runs: list[Run]) -> None:
    models = _get(server, "/api/models", mode)["models"]
    assert sum(m["llm_calls"] for m in models) == sum(len(r.steps) for r in runs)


def _regressions(server: Server, mode: str | None, runs: list[Run]) -> None:
    report = _get(server, "/api/regressions", mode, comparison="window", window="1d", baseline="7d",
                  metrics="steps", min_samples=2)
    (finding,) = report["findings"]
    assert finding["current"]["n"] == len(runs)
    assert finding["current"]["value"] == pytest.approx(sum(len(r.steps) for r in runs) / len(runs))


FAMILIES: dict[str, Check] = {
    "overview": _overview, "runs": _runs_list, "failures": _failures, "tools": _tools, "cost": _cost,
    "models": _models, "regressions": _regressions,
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_aggregate_counts_exactly_the_asked_modes(loaded: Any, family: str) -> None:
    server, runs = loaded
    if not_ported(server.store, family):
        pytest.skip(f"/api/{family} answers 501 on this store")
    for mode, modes in SELECTIONS.items():
        selected = _selected(runs, modes)
        assert selected, mode
        FAMILIES[family](server, mode, selected)


def test_unknown_mode_is_422_naming_it(loaded: Any) -> None:
    server, _ = loaded
    for path in ("/api/overview", "/api/runs", "/api/tools", "/api/cost", "/api/regressions"):
        if not_ported(server.store, path.split("/")[2]):
            continue
        response = server.get(path, mode="live,canary")
        assert response.status_code == 422, (path, response.text)
        assert "canary" in response.text


def test_eval_runs_listed_by_their_evaluation_id_without_a_mode(loaded: Any) -> None:
    """Asking for an evaluation's runs means them, although they are not live."""
    server, runs = loaded
    response = server.get("/api/runs", since="1d", eval_case_id="none-such")
    assert response.status_code == 200 and response.json()["runs"] == []
    listed = _get(server, "/api/runs", "eval", limit=1000)["runs"]
    assert len(listed) == len(_selected(runs, {"eval"}))


def test_alert_rules_judge_only_the_modes_they_name(loaded: Any) -> None:
    server, runs = loaded
    if not_ported(server.store, "alerts"):
        pytest.skip("/api/alerts answers 501 on this store")
    assert max(len(r.steps) for r in _selected(runs, {"live"})) < 3.5 < min(len(r.steps) for r in _selected(runs, {"eval"}))
    with server.client() as client:
        check = client.post("/api/alerts/check")
    assert check.status_code == 200, check.text
    firing = {f["rule"] for f in check.json()["firing"]}
    assert firing == {"steps high (eval)"}
    rules = {r["rule"]["name"]: r["rule"] for r in server.get("/api/alerts").json()["rules"]}
    assert rules["steps high (live)"]["modes"] == ["live"] and rules["steps high (eval)"]["modes"] == ["eval"]
