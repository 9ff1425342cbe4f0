"""One load can hold 50,000 spans; indexing it in one go held the writer (and every queued load) for
seconds. The indexer takes the pending spans in chunks sized to its step's budget: a step must leave
the rest of a large load pending, later steps must index every span exactly once, with the content
read from `spans` (search_pending keeps only the keys), and nothing may stay pending at the end."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bench._ingest_payloads import PayloadFactory
from ingest.normalize import spans_table
from ingest.search import pending
from ingest.search.content import content_fields
from ingest.search.index import SearchIndex
from ingest.search.indexer import SearchIndexer
from ingest.store.database import open_database
from ingest.store.loading import ensure_position_row, load_batch
from ingest.store.migrate import migrate
from ingest.store.spool import Position

REQUESTS = 100  # ~30,000 spans in ONE load transaction


def test_large_load_indexed_in_chunks_each_span_once(tmp_path):
    now = datetime.now(UTC).replace(tzinfo=None)
    conn = open_database(tmp_path / "s.duckdb")
    migrate(conn)
    ensure_position_row(conn, now)
    indexer = SearchIndexer(SearchIndex(tmp_path / "s.duckdb.search"))
    indexer.step(conn)  # the empty index exists before any span is stored (no rebuild)
    factory = PayloadFactory(300)
    tables = [spans_table("p", ExportTraceServiceRequest.FromString(factory.next()[0]), now) for _ in range(REQUESTS)]
    batch = pa.concat_tables(tables)
    load_batch(conn, batch, Position(1, 1), now)

    stored = conn.execute("SELECT count(*) FROM search_pending").fetchall()[0][0]
    assert stored == batch.num_rows
    queued_content = conn.execute(
        "SELECT count(*) FROM search_pending WHERE attributes IS NOT NULL OR events IS NOT NULL"
    ).fetchall()[0][0]
    assert queued_content == 0  # the keys only: the content is read from spans

    expected = sum(
        1
        for status_message, attributes, events in conn.execute(
            "SELECT status_message, attributes, events FROM spans"
        ).fetchall()
        for _ in content_fields(status_message, attributes, events)
    )
    assert expected > batch.num_rows  # the payload's messages and tool results are content

    indexer.note_loaded()
    indexer.step(conn)
    left = conn.execute("SELECT count(*) FROM search_pending").fetchall()[0][0]
    assert 0 < left < stored  # a chunk of the load, not all of it, and not nothing

    steps = 1
    while indexer.work:
        indexer.step(conn)
        steps += 1
        assert steps < 1000
    assert conn.execute("SELECT count(*) FROM search_pending").fetchall()[0][0] == 0
    assert indexer.index.documents() == expected  # every document once (a span twice would be skipped, not added)
    assert indexer.indexed == expected

    # a chunk's rows carry the stored content of exactly the spans taken
    second = spans_table("p", ExportTraceServiceRequest.FromString(factory.next()[0]), now)
    load_batch(conn, second, Position(1, 2), now)
    rows = pending.take(conn, 10)
    assert len(rows) == 10
    for project, trace_id, span_id, start, status_message, attributes, events in rows:
        assert (start, status_message, attributes, events) == tuple(conn.execute(
            "SELECT start_time, status_message, attributes, events FROM spans WHERE project = ? AND trace_id = ? AND span_id = ?",
            [project, trace_id, span_id],
        ).fetchall()[0])
    pending.done_taken(conn)
    assert conn.execute("SELECT count(*) FROM search_pending").fetchall()[0][0] == second.num_rows - 10
    indexer.index.close()
    conn.close()
