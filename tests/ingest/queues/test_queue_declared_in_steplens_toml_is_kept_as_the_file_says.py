"""A `[[queues]]` entry of steplens.toml exists once the server starts, fills like any queue, and
belongs to the file: the API refuses to change or delete it (409 saying where to edit it). On a
restart with a changed entry, the queue takes the new definition and keeps its items; an entry
removed from the file leaves an ordinary queue behind. A queue declared twice is a config error."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ingest.config import load_settings
from tests.ingest.api.otlp_runs import Emitter
from tests.ingest.conftest import _ServerThread
from tests.ingest.queues.harness import Api, emit_runs, settle

TOML = """
queue_fill_interval_s = 0.2
grpc_port = 0
normalize_processes = 0

[[scores]]
name = "correct"
data_type = "boolean"

[[queues]]
name = "from-file"
description = "{description}"
score_configs = ["correct"]
sampling_rate = 1.0
filter = {{ agent = "support_agent" }}
"""


def _start(tmp_path: Path, text: str) -> _ServerThread:
    config = tmp_path / "steplens.toml"
    config.write_text(text)
    return _ServerThread(load_settings(config, db=tmp_path / "steplens.duckdb", host="127.0.0.1"))


def test_declared_queue_fills_refuses_api_edits_and_follows_the_file(tmp_path: Path) -> None:
    thread = _start(tmp_path, TOML.format(description="first"))
    srv = thread.start()
    try:
        api = Api(srv.http_url)
        (queue,) = api.ok("GET", "/api/queues")["queues"]
        assert (queue["name"], queue["declared"], queue["description"]) == ("from-file", True, "first")
        assert queue["filter"]["agent"] == "support_agent"
        emitter = Emitter()
        runs = {r.trace_id for r in emit_runs(emitter, 5)}
        api.send(emitter)
        assert settle(api, "from-file", srv.store) == 5
        put = api.call("PUT", "/api/queues/from-file", json={"name": "from-file", "score_configs": ["correct"]})
        assert put.status_code == 409 and "steplens.toml" in put.text
        assert api.call("DELETE", "/api/queues/from-file").status_code == 409
    finally:
        thread.stop()

    thread = _start(tmp_path, TOML.format(description="second"))
    srv = thread.start()
    try:
        api = Api(srv.http_url)
        queue = api.ok("GET", "/api/queues/from-file")
        assert queue["description"] == "second" and queue["declared"] is True
        assert {i["trace_id"] for i in api.items("from-file")} == runs
    finally:
        thread.stop()

    thread = _start(tmp_path, TOML.split("[[queues]]")[0])
    srv = thread.start()
    try:
        api = Api(srv.http_url)
        assert api.ok("GET", "/api/queues/from-file")["declared"] is False
        assert api.call("DELETE", "/api/queues/from-file").status_code == 204
        assert api.call("GET", "/api/queues/from-file").status_code == 404
    finally:
        thread.stop()


def test_a_queue_declared_twice_is_a_config_error(tmp_path: Path) -> None:
    again = '\n[[queues]]\nname = "from-file"\nscore_configs = ["correct"]\n'
    (tmp_path / "steplens.toml").write_text(TOML.format(description="x") + again)
    with pytest.raises(ValidationError, match="declared more than once: default/from-file"):
        load_settings(tmp_path / "steplens.toml")
