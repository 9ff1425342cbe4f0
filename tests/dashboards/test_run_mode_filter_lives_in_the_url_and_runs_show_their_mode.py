"""Shadow, eval and replay runs were mixed into every dashboard figure and no page said which mode a
run was. The sidebar's Run mode (live by default, `mode` in the URL) must filter the Runs table and
the Overview, a widget edit must reach the URL, and the Runs and Trace pages must show the mode (a
run that names none is live). AppTest against a real server with runs of every mode."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.dashboards.conftest import open_page, texts
from tests.ingest.api.analytics_runs import Chat, Run, RunEmitter, Step
from tests.ingest.api.harness import BACKENDS, Server

# the pages only call the API: each runs against a server on either store
pytestmark = pytest.mark.parametrize("backend", BACKENDS)

MODES = [None, "live", "live", "eval", "eval", "eval", "shadow", "replay"]


def test_mode_filters_pages_and_is_shown(start_ingest_server: Callable[..., Any], ui_env: Callable[..., None]) -> None:
    running = start_ingest_server(grpc_port=0)
    server = Server(running.http_url, running.store, running.settings)
    emitter = RunEmitter()
    start = datetime.now(UTC) - timedelta(hours=1)
    runs = [emitter.run(Run(steps=[Step(chats=[Chat()])], agent="moded", mode=m, start=start + timedelta(minutes=i)))
            for i, m in enumerate(MODES)]
    server.send(emitter.request())
    ui_env(server.url)

    at = open_page("runs", {})
    assert not at.exception
    assert at.selectbox(key="w_mode").value == "live" and at.query_params["mode"] == "live"
    assert sorted(at.dataframe[0].value["mode"]) == ["live"] * MODES.count("live") + ["live"]  # None is live

    at = open_page("runs", {"mode": "eval"})
    assert list(at.dataframe[0].value["mode"]) == ["eval"] * MODES.count("eval")
    at.selectbox(key="w_mode").select("all").run()
    assert at.query_params["mode"] == "all"
    assert sorted(at.dataframe[0].value["mode"]) == sorted(m or "live" for m in MODES)

    at = open_page("overview", {"mode": "shadow"})
    assert {m.label: m.value for m in at.metric}["Runs"] == str(MODES.count("shadow"))

    replay = next(r for r in runs if r.mode == "replay")
    at = open_page("trace", {"trace_id": replay.trace_id})
    assert not at.exception and "replay run" in texts(at)
