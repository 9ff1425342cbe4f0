"""The Compare page (the step-aligned diff of two runs) names the first divergent step of two real
kernel runs on a server of either store: the page only calls /api/diff, so what it shows must not
depend on which store answers.

Run by Streamlit's AppTest against the real ingest server (the kernel's agents traced into it).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.dashboards.conftest import open_page, texts
from tests.dashboards.workload import load_agent_runs
from tests.ingest.api.harness import BACKENDS


@pytest.mark.parametrize("backend", BACKENDS)
def test_compare_page_names_the_first_divergent_step(start_ingest_server: Any, ui_env: Any, backend: str) -> None:
    srv = start_ingest_server(grpc_port=0, store=backend)
    runs = load_agent_runs(srv.http_url, srv.store)
    ui_env(srv.http_url)
    at = open_page("compare", {"a": runs.ok_v1, "b": runs.ok_v2})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "First divergence at **step 1**, in the **arguments**." in texts(at)
