"""The dashboards send their configured key; a key bound to one project sees only that project's
runs and traces, and a wrong key is a clear message, not an empty page that looks fine."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ingest.config import ApiKey
from tests.dashboards.conftest import open_page, send_otlp, texts
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter, RunSpec

# the pages only call the API: each runs against a server on either store
pytestmark = pytest.mark.parametrize("backend", BACKENDS)

NOW = datetime.now(UTC).replace(microsecond=0)


def test_read_key_sees_only_its_project(start_ingest_server, ui_env) -> None:
    srv = start_ingest_server(grpc_port=0, api_keys=[
        ApiKey(key="key-alpha-0123456789", project="alpha", scopes=["ingest", "read"]),
        ApiKey(key="key-beta-0123456789", project="beta", scopes=["ingest", "read"]),
    ])
    ids = {}
    for project, key in (("alpha", "key-alpha-0123456789"), ("beta", "key-beta-0123456789")):
        em = Emitter()
        ids[project] = em.run(RunSpec(start=NOW, agent=f"agent_{project}")).trace_id
        send_otlp(srv.http_url, em.request(), key=key)
    assert srv.store.wait_loaded(30)

    ui_env(srv.http_url, key="key-alpha-0123456789")
    at = open_page("runs", {"since": "all"})
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["project"]) == ["alpha"] and list(table["agent"]) == ["agent_alpha"]
    at = open_page("trace", {"trace_id": ids["beta"]})
    assert "not found" in texts(at) and not at.metric  # another project's trace does not exist for this key

    ui_env(srv.http_url, key="wrong-key-0123456789")
    at = open_page("runs", {"since": "all"})
    assert "refused the dashboards' API key" in texts(at) and "STEPLENS_API_KEY" in texts(at)
