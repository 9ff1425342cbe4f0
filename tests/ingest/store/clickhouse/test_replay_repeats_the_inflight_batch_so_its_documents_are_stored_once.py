"""A load batch is one insert per table whose dedup token names the batch's first and last spool
record; the batch's end is fsynced (clickhouse.inflight) before its inserts. A crash after the
batch's search documents went in but before its spans did leaves documents that no anti-join can
see: the replay must cut its first batch at the same record, so the documents' insert repeats the
same token and ClickHouse drops it. Without the cut the replay batches every record together under
another token and the documents of the crashed batch are stored twice."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pyarrow as pa

from ingest.config import Settings
from ingest.normalize import spans_table
from ingest.search.indexer import META_BUILT_AT
from ingest.store.clickhouse import search_load
from ingest.store.clickhouse.migrate import migrate
from ingest.store.clickhouse.search_index import write_meta
from ingest.store.clickhouse.transport import ChdbTransport
from ingest.store.clickhouse.writer import spool_id, write_inflight
from ingest.store.spool import SpoolWriter, encode_record
from tests.ingest.store.otlp_build import agent_run, request
from tracer import conventions as c


def _transport(settings: Settings) -> tuple[ChdbTransport, str]:
    url = settings.clickhouse_url
    return ChdbTransport(url[len("chdb://") :], settings.clickhouse_database), settings.clickhouse_database


def test_replay_after_a_crash_between_documents_and_spans_stores_each_document_once(
    make_ch_settings: Callable[..., Settings], open_ch_store
) -> None:
    settings = make_ch_settings()
    spool = settings.spool_path
    requests = []
    spans = 0
    for i in range(4):
        root, kids = agent_run(steps=1, agent=f"agent_{i}")
        root.attrs[c.RUN_TASK] = f"refund order {i} for the customer"  # content: a search document
        requests.append(request([root, *kids]))
        spans += 1 + len(kids)
    writer = SpoolWriter(spool, first_seq=1)
    ends = writer.append([encode_record("p", r.SerializeToString()) for r in requests])
    writer.close()

    # the crashed node's batch was records 1-2: its documents were inserted, its spans and mark were not
    write_inflight(spool, ends[1])
    token = f"steplens:{spool_id(spool)}:{ends[0].segment}:{ends[0].offset}-{ends[1].segment}:{ends[1].offset}:spans"
    now = datetime.now(UTC)
    crashed = pa.concat_tables([spans_table("p", r, now) for r in requests[:2]])
    transport, database = _transport(settings)
    try:
        migrate(transport, database, None, 0)
        # the crashed node had run before: its search index was built (no rebuild at the next start)
        write_meta(transport, database, {META_BUILT_AT: now.replace(tzinfo=None).isoformat()})
        sent = search_load.load_docs(transport, database, crashed, token)
    finally:
        transport.close()
    assert sent > 0

    store = open_ch_store()
    assert store.stats().replayed_records == 4
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM spans").fetchone()[0] == spans
    transport = store._writer.transport  # the store's own session (one chDB session per process)
    rows, distinct = (
        transport.query_arrow(
            f"SELECT count(), uniqExact(project, trace_id, span_id, field) FROM `{database}`.search_docs",
            settings={"final": 0},  # every stored row, merged or not
        )
        .to_pylist()[0]
        .values()
    )
    assert rows == distinct, f"{rows - distinct} document(s) stored twice by the replay"
    assert distinct > sent  # the other two records' documents are there too
