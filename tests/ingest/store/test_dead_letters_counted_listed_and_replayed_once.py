"""Dead letters are visible and recoverable: a counter by reason on /metrics, a log line with the
real cause, `steplens spool list` showing them, and `steplens spool replay` loading them into their
own project once the cause is fixed, exactly once however often it runs; while the server holds
the database, replay refuses with what to do."""

from __future__ import annotations

import logging
import subprocess
import sys
from datetime import datetime

import httpx
import pyarrow as pa
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from typer.testing import CliRunner

from ingest.normalize import spans_table
from ingest.store import SpanStore
from ingest.store.database import open_database
from steplens.cli import app
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request


def buggy_normalizer(project: str, req: ExportTraceServiceRequest, ingested_at: datetime) -> pa.Table:
    if project == "beta":
        raise ValueError("normalizer bug on beta's spans")
    return spans_table(project, req, ingested_at)


def _spans(db, project: str) -> int:
    conn = open_database(db, read_only=True)
    try:
        return conn.execute("SELECT count(*) FROM spans WHERE project = ?", [project]).fetchall()[0][0]
    finally:
        conn.close()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_dead_letter_counted_logged_listed_replayed_once(make_settings, caplog) -> None:
    settings = make_settings()
    store = SpanStore(settings, normalizer=buggy_normalizer)
    store.start()
    good, good_kids = agent_run(steps=1)
    bad, bad_kids = agent_run(steps=2)
    with caplog.at_level(logging.ERROR, logger="ingest.store.writer"):
        await store.submit("alpha", request([good, *good_kids]))
        await store.submit("beta", request([bad, *bad_kids]))
        assert store.wait_loaded(20)
    assert store.metrics.records_dead_lettered.labels(reason="ValueError")._value.get() == 1
    assert any("normalizer bug on beta's spans" in r.getMessage() and "'beta'" in r.getMessage() for r in caplog.records)
    store.stop()

    runner = CliRunner()
    listed = runner.invoke(app, ["spool", "list", "--db", str(settings.db)])
    assert listed.exit_code == 0, listed.output
    assert "beta" in listed.output and "ValueError" in listed.output and "normalizer bug" in listed.output
    assert "1 dead record(s)" in listed.output

    # the cause is fixed (replay normalizes with the real normalizer); the server is stopped
    replayed = runner.invoke(app, ["spool", "replay", "--db", str(settings.db)])
    assert replayed.exit_code == 0, replayed.output
    assert "replayed 1 record(s): 7 span(s) stored" in replayed.output
    assert _spans(settings.db, "beta") == 7 and _spans(settings.db, "alpha") == 4

    again = runner.invoke(app, ["spool", "replay", "--db", str(settings.db)])
    assert again.exit_code == 0 and "nothing to replay" in again.output
    assert _spans(settings.db, "beta") == 7
    assert "no dead records" in runner.invoke(app, ["spool", "list", "--db", str(settings.db)]).output


@pytest.mark.parametrize("backend", BACKENDS)
async def test_replay_refuses_while_the_server_holds_the_database(make_settings) -> None:
    settings = make_settings()
    store = SpanStore(settings, normalizer=buggy_normalizer)
    store.start()
    try:
        bad, bad_kids = agent_run(steps=1)
        await store.submit("beta", request([bad, *bad_kids]))
        assert store.wait_loaded(20)
        done = subprocess.run(
            [sys.executable, "-m", "steplens.cli", "spool", "replay", "--db", str(settings.db)],
            capture_output=True, text=True, timeout=120, check=False,
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert "stop it first" in done.stderr
    finally:
        store.stop()


def test_dead_letter_counter_on_metrics_endpoint(start_ingest_server) -> None:
    server = start_ingest_server()
    text = httpx.get(server.http_url + "/metrics").text
    assert "steplens_records_dead_lettered" in text and "steplens_storage_unwritable" in text


def test_dead_log_record_listed_with_its_kind_and_read_back(tmp_path) -> None:
    from ingest.store import deadletter
    from ingest.store.spool import Position, RecordKind

    spool = tmp_path / "spool"
    deadletter.write(spool, Position(3, 77), "gamma", b"\x0a\x00", 2, ValueError("bad log"), RecordKind.LOGS)
    (dead,) = deadletter.list_dead(spool)
    assert (dead.kind, dead.project, dead.spans, dead.reason) == ("logs", "gamma", 2, "ValueError")
    assert deadletter.read_record(deadletter.dead_dir(spool) / f"{dead.stem}.rec") == (RecordKind.LOGS, "gamma", b"\x0a\x00")
    deadletter.mark_replayed(spool, dead.stem)
    assert deadletter.list_dead(spool) == []
