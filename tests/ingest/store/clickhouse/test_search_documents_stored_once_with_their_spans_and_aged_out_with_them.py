"""Search documents on ClickHouse: the load path writes the documents the FTS5 side would index (one per
span and content field), exactly once whatever is replayed (a crash between the documents' insert and
the spans', a replay after both, a client's retry), a store with spans but no documents builds them at
start, a rebuild whose node stopped is resumed by the next start, and retention ages them out with their spans (the
sweep or the table's TTL, whichever acts first)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from ingest.clock import utcnow
from ingest.normalize import spans_table
from ingest.store.clickhouse import load, search_load
from ingest.store.clickhouse.migrate import migrate
from ingest.store.clickhouse.transport import ChdbTransport
from tests.ingest.store.otlp_build import S, new_trace_id, request
from tracer import conventions as c


def _content_spans(start: datetime) -> list[S]:
    tid = new_trace_id()
    root = S(tid, "invoke_agent helper", start=start,
             attrs={c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.RUN_TASK: "find the wombat", c.RUN_ANSWER: "found"})
    tool = S(tid, "execute_tool track", parent=root.span_id, start=start + timedelta(milliseconds=5),
             attrs={c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_CALL_RESULT: "wombat in burrow 7"},
             error=True, message="tracker offline", exception=("TrackerError", "no signal"))
    return [root, tool]


def _docs(transport: ChdbTransport) -> list[tuple]:
    table = transport.query_arrow(
        "SELECT project, trace_id, span_id, field, text FROM steplens.search_docs ORDER BY span_id, field",
        settings={"final": 0},  # raw rows: a duplicate not merged yet would show
    )
    return sorted(zip(*(table.column(i).to_pylist() for i in range(5)), strict=True))


def test_documents_are_the_content_fields_and_stored_once_through_every_replay(tmp_path: Path) -> None:
    transport = ChdbTransport(str(tmp_path / "ch"))
    try:
        migrate(transport, "steplens")
        rows = spans_table("p", request(_content_spans(datetime(2026, 3, 1, tzinfo=UTC))), utcnow())
        expected = sorted(
            (d.project, d.trace_id, d.span_id, d.field, d.text)
            for d in search_load.docs_of(search_load.content_rows(rows))
        )
        assert {(f, text) for *_, f, text in expected} == {
            (c.RUN_TASK, "find the wombat"), (c.RUN_ANSWER, "found"), (c.GEN_AI_TOOL_CALL_RESULT, "wombat in burrow 7"),
            ("status_message", "tracker offline"), ("events", "TrackerError\nno signal"),
        }  # fmt: skip
        token = "steplens:test:1:0:spans"
        # a crash after the documents' insert, before the spans': the replay sends both again
        search_load.load_docs(transport, "steplens", rows, token)
        assert _docs(transport) == expected
        assert load.load_spans(transport, "steplens", rows, token)[0] == 2
        assert _docs(transport) == expected
        # a replay after both inserts, and a client's retry of the same spans (another record)
        assert load.load_spans(transport, "steplens", rows, token)[0] == 0
        assert load.load_spans(transport, "steplens", rows, "steplens:test:2:0:spans")[0] == 0
        assert _docs(transport) == expected
    finally:
        transport.close()


async def test_retention_deletes_documents_with_their_spans(open_ch_store) -> None:
    store = open_ch_store(retention_days=2)
    now = datetime.now(UTC)
    old, new = _content_spans(now - timedelta(days=5)), _content_spans(now - timedelta(hours=1))
    await store.submit("p", request([*old, *new]))
    assert store.wait_loaded(20)
    store.sweep_retention()  # (the TTL may have dropped the old rows at insert already)
    hits = store.search_index.search("wombat", None)
    assert sorted(h.field for h in hits if h.trace_id == new[0].trace_id) == [c.GEN_AI_TOOL_CALL_RESULT, c.RUN_TASK]
    assert {h.trace_id for h in hits} == {new[0].trace_id}
    with store.read() as cur:
        left = {t for (t,) in cur.execute("SELECT DISTINCT trace_id FROM search_docs").fetchall()}
        ttl = cur.execute("SELECT create_table_query FROM system.tables WHERE database = 'steplens' "
                          "AND name = 'search_docs'").fetchone()[0]
    assert left == {new[0].trace_id}
    assert "TTL toDateTime(start_time) + toIntervalDay(2)" in ttl


async def test_a_store_with_spans_but_no_documents_builds_them_at_start(open_ch_store) -> None:
    """A store made before search lived in ClickHouse (spans, no documents, no built index): the next
    start writes the documents from the stored spans, and the status says when it is done."""
    import time

    from ingest.store.clickhouse.search_index import write_meta

    store = open_ch_store()
    spans = _content_spans(datetime.now(UTC) - timedelta(hours=1))
    await store.submit("p", request(spans))
    assert store.wait_loaded(20)
    transport = store._writer.transport  # the test plays the older version: no documents, no bookkeeping
    transport.command("TRUNCATE TABLE steplens.search_docs")
    write_meta(transport, "steplens", {"built_at": None})
    assert store.search_index.search("wombat", None) == []
    store.stop()
    store = open_ch_store()
    deadline = time.monotonic() + 30
    while "built_at" not in (meta := store.search_index.meta()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "built_at" in meta and "rebuild_next_us" not in meta and meta["documents"] == "5"
    assert sorted(h.field for h in store.search_index.search("wombat", None)) == [c.GEN_AI_TOOL_CALL_RESULT, c.RUN_TASK]


async def test_a_rebuild_whose_node_stopped_is_resumed_by_the_next_start(open_ch_store, monkeypatch) -> None:
    """A rebuild's position lives in ClickHouse: when its node stops midway (the position has not moved
    for minutes), the next node to start resumes it from there and finishes it."""
    import time

    from ingest.search.index import to_us
    from ingest.store.clickhouse import search_index
    from ingest.store.clickhouse.search_index import write_meta

    store = open_ch_store()
    start = datetime.now(UTC) - timedelta(hours=3)
    early, late = _content_spans(start), _content_spans(start + timedelta(hours=2))
    await store.submit("p", request([*early, *late]))
    assert store.wait_loaded(20)
    store.stop()
    # a node emptied the documents, wrote the early run's again, moved past it and stopped
    transport = ChdbTransport(str(store.settings.clickhouse_url[len("chdb://"):]))
    try:
        rows = transport.query_arrow("SELECT count() FROM steplens.search_docs").column(0)[0].as_py()
        assert rows == 10
        transport.command("ALTER TABLE steplens.search_docs DELETE WHERE trace_id = {t:String}",
                          {"t": late[0].trace_id}, {"mutations_sync": 2})
        position = start.replace(tzinfo=None) + timedelta(hours=1)
        write_meta(transport, "steplens", {
            "rebuild_next_us": str(to_us(position)), "rebuild_end_us": str(to_us(position + timedelta(hours=2))),
            "rebuild_started_us": str(to_us(datetime.now(UTC).replace(tzinfo=None))), "built_at": None,
        })  # fmt: skip
    finally:
        transport.close()
    monkeypatch.setattr(search_index, "STALLED_AFTER", timedelta(0))  # (instead of waiting two minutes)
    store = open_ch_store()
    deadline = time.monotonic() + 30
    while "built_at" not in (meta := store.search_index.meta()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "built_at" in meta and "rebuild_next_us" not in meta and meta["documents"] == "10"
    assert {h.trace_id for h in store.search_index.search("wombat", None)} == {early[0].trace_id, late[0].trace_id}
