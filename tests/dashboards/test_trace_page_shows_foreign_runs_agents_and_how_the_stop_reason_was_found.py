"""The trace page of a foreign client's run (the real OpenAI Agents capture) says how its stop reason
was found, shows a failed run's evidence, and lists its agents (the handoff's sub-agent with its own
calls) in a table."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ingest.config import Settings
from tests.dashboards.conftest import open_page, texts
from tests.ingest.api.harness import BACKENDS, backend_settings
from tests.ingest.conftest import RunningServer, _ServerThread

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks" / "openai_agents_openinference"


@pytest.fixture(params=BACKENDS)  # the page only calls the API: a server on either store
def foreign_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[RunningServer, dict[str, str]]]:
    thread = _ServerThread(Settings(db=tmp_path / "steplens.duckdb", host="127.0.0.1", grpc_port=0,
                                    **backend_settings(tmp_path, request.param)))
    server = thread.start()
    try:
        manifest = json.loads((CAPTURE / "manifest.json").read_text())
        for body in manifest["bodies"]:
            r = httpx.post(f"{server.http_url}{body['path']}", content=(CAPTURE / body["file"]).read_bytes(),
                           headers={"Content-Type": body["content_type"]}, timeout=60)  # fmt: skip
            assert r.status_code == 200, r.text
        assert server.store.wait_loaded(60)
        yield server, {run["scenario"]: run["trace_id"] for run in manifest["runs"]}
    finally:
        thread.stop()


def test_foreign_run_trace_page(foreign_server, ui_env) -> None:
    server, traces = foreign_server
    ui_env(server.http_url)
    at = open_page("trace", {"trace_id": traces["tool_error"]})
    assert not at.exception
    assert "ok · finish (inferred from the spans)" in texts(at)
    agents = next(df.value for df in at.dataframe if "tool errors" in df.value.columns and "kind" in df.value.columns)
    rows = {name.strip(): row for name, row in zip(agents["agent"], agents.to_dict("records"), strict=True)}
    assert {"weather_agent", "forecast_writer"} <= set(rows)
    assert rows["forecast_writer"]["LLM calls"] >= 1 and rows["weather_agent"]["tool errors"] == 1
    assert "sub-agents: `forecast_writer`" in texts(at)

    at = open_page("trace", {"trace_id": traces["turn_limit"]})
    assert not at.exception
    shown = texts(at)
    assert "failed · stop reason: max_steps (inferred from the spans)" in shown
    assert "Max turns exceeded" in shown  # the evidence, as plain text
