"""On the ClickHouse store, log records and scores are loaded, not left behind: an OTLP logs export
sent twice by the SDK exporter is stored once, its evaluation result becomes one score, and a score
POSTed twice is one score (the same id replaces)."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs.export import LogRecordExportResult

from tests.support.genai_logs import chat_with_events
from tests.support.scores_http import post_scores


def test_logs_export_retried_is_stored_once_and_its_evaluation_is_a_score(start_ingest_server, tmp_path) -> None:
    srv = start_ingest_server(store="clickhouse", clickhouse_url=f"chdb://{tmp_path / 'ch'}")
    chat = chat_with_events()
    exporter = OTLPLogExporter(endpoint=srv.http_url + "/v1/logs", timeout=10)
    try:
        assert exporter.export(chat.logs) is LogRecordExportResult.SUCCESS
        assert srv.store.wait_loaded(20)
        assert exporter.export(chat.logs) is LogRecordExportResult.SUCCESS  # the retry
    finally:
        exporter.shutdown()
    assert srv.store.wait_loaded(20)
    with srv.store.read() as cur:
        logs = cur.execute("SELECT count() FROM log_records WHERE trace_id = ?", [chat.trace_hex]).fetchone()[0]
        scores = cur.execute(
            "SELECT name, source, count() FROM scores FINAL WHERE trace_id = ? GROUP BY name, source", [chat.trace_hex]
        ).fetchall()
    assert logs == 4
    assert len(scores) == 1 and scores[0][1] == "client" and scores[0][2] == 1
    stats = srv.store.stats()
    assert (stats.logs_stored, stats.logs_deduplicated) == (4, 4)


def test_posted_score_sent_twice_is_one_score(start_ingest_server, tmp_path) -> None:
    srv = start_ingest_server(store="clickhouse", clickhouse_url=f"chdb://{tmp_path / 'ch'}")
    score = {"trace_id": "ab" * 16, "name": "helpfulness", "value": 0.75, "score_id": "s-1"}
    post_scores(srv.http_url, [score], srv.store)
    post_scores(srv.http_url, [{**score, "value": 0.5}], srv.store)  # the same id: replaces
    with srv.store.read() as cur:
        rows = cur.execute("SELECT value_numeric FROM scores FINAL WHERE score_id = 's-1'").fetchall()
    assert rows == [(0.5,)]
