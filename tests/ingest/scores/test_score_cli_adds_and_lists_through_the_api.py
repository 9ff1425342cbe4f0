"""`steplens score add` stores a score through POST /api/scores with the key from STEPLENS_API_KEY
(true/false, numbers and labels typed as text become the right type), a config violation exits 1
with the server's reason, no server exits 2; `steplens score list` shows them, table or JSON.

The failure this covers: a reviewer's terminal label stored as the string "true", or a refused
score reported as success."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from ingest.config import ApiKey
from ingest.scores.cli import parse_value
from ingest.scores.configs import ScoreConfig
from steplens.cli import app
from tests.ingest.api.otlp_runs import RunSpec
from tests.ingest.scores.conftest import get_scores, send_runs
from tests.tracer.otlp_sink import closed_port

KEY = "annotate-key-0123456789"
READ = "read-key-0123456789"


def _cli(*args: str, key: str = KEY) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "240", "STEPLENS_API_KEY": key})


def test_add_and_list(start_ingest_server: Any) -> None:
    srv = start_ingest_server(
        grpc_port=0, scores=[ScoreConfig(name="stars", data_type="numeric", min=1, max=5)],
        api_keys=[ApiKey(key=KEY, project="p", scopes=["annotate", "ingest"]),
                  ApiKey(key=READ, project="p", scopes=["read"])])
    api = ["--api", srv.http_url]
    run = send_runs(srv.http_url, [RunSpec(agent="ticket")], KEY)[0]
    added = _cli("score", "add", "correct", "true", "--trace", run.trace_id, "--author", "ana",
                 "--comment", "checked the order", *api)
    assert added.exit_code == 0, added.output
    assert "stored score correct = true" in added.output
    assert _cli("score", "add", "stars", "4", "--trace", run.trace_id, *api).exit_code == 0
    assert _cli("score", "add", "tone", "5", "--type", "categorical", "--session", "conv-1", *api).exit_code == 0
    refused = _cli("score", "add", "stars", "9", "--trace", run.trace_id, *api)
    assert refused.exit_code == 1 and "above the maximum 5" in refused.output
    forbidden = _cli("score", "add", "stars", "3", "--trace", run.trace_id, *api, key=READ)
    assert forbidden.exit_code == 1 and "annotate" in forbidden.output
    assert srv.store.wait_loaded(10)

    got = {s["name"]: s for s in get_scores(srv.http_url, READ)}
    assert (got["correct"]["value"], got["correct"]["source"], got["correct"]["author"]) == (True, "human", "ana")
    assert got["stars"]["value"] == 4.0 and got["tone"]["value"] == "5"

    listed = _cli("score", "list", "--trace", run.trace_id, "--format", "json", *api, key=READ)
    assert listed.exit_code == 0, listed.output
    assert sorted(s["name"] for s in json.loads(listed.output)) == ["correct", "stars"]
    table = _cli("score", "list", "--agent", "ticket", *api, key=READ)
    assert table.exit_code == 0 and "checked the order" in table.output and "scores: 2" in table.output


def test_no_server_exits_2() -> None:
    out = _cli("score", "add", "x", "1", "--session", "s", "--api", f"http://127.0.0.1:{closed_port()}")
    assert out.exit_code == 2 and "no steplens server answers" in out.output


def test_values_typed_as_text() -> None:
    assert parse_value("true", None) is True and parse_value("No", None) is False
    assert parse_value("4", None) == 4 and parse_value("0.5", None) == 0.5 and parse_value("1e3", None) == 1000.0
    assert parse_value("good", None) == "good" and parse_value("5", "categorical") == "5"
    assert parse_value("true", "categorical") == "true"
