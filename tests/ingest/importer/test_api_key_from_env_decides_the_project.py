"""The key comes from STEPLENS_API_KEY and is sent as a Bearer token; the project is the key's (the
server never takes it from the payload), and a missing or read-only key stops the import at once
with what to do."""

from __future__ import annotations

import secrets

from typer.testing import CliRunner

from ingest.config import ApiKey
from steplens.cli import app
from tests.ingest.importer.collector_files import FIXTURE, runs


def test_key_from_env_imports_into_its_project(start_ingest_server, monkeypatch) -> None:
    ingest_key, reader_key = secrets.token_hex(16), secrets.token_hex(16)
    srv = start_ingest_server(api_keys=[
        ApiKey(key=ingest_key, project="team-a", scopes=["ingest", "read"]),
        ApiKey(key=reader_key, project="team-a", scopes=["read"]),
    ])
    runner = CliRunner()

    monkeypatch.delenv("STEPLENS_API_KEY", raising=False)
    result = runner.invoke(app, ["import", str(FIXTURE), "--api", srv.http_url])
    assert result.exit_code == 2 and "set STEPLENS_API_KEY" in result.output, result.output

    monkeypatch.setenv("STEPLENS_API_KEY", reader_key)
    result = runner.invoke(app, ["import", str(FIXTURE), "--api", srv.http_url])
    assert result.exit_code == 2 and "ingest scope" in result.output, result.output
    assert reader_key not in result.output

    monkeypatch.setenv("STEPLENS_API_KEY", ingest_key)
    result = runner.invoke(app, ["import", str(FIXTURE), "--api", srv.http_url])
    assert result.exit_code == 0, result.output
    assert ingest_key not in result.output
    assert srv.store.wait_loaded(10)
    stored = runs(srv.http_url, api_key=ingest_key)
    assert len(stored) == 2 and {r["project"] for r in stored} == {"team-a"}
