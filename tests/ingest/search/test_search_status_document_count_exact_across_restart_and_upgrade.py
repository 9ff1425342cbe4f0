"""Through a real server: `/api/search/status` and every `/api/search` answer report the index's exact
document count (from its counter) with all their fields, after ingest, after a restart over an index made
before the counter (counted once when the server opens it) and after `POST /api/search/reindex`."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from ingest.api.search import IndexStatus
from ingest.search.index import META_DOCUMENTS
from tests.ingest.api.content_runs import ContentRun, ToolCall, emit, wait_indexed
from tests.ingest.api.harness import start_server, stop_server
from tests.ingest.api.otlp_runs import Emitter

WINDOW = {"since": "2000-01-01T00:00:00Z"}


def _real_count(path: Path) -> int:
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])


def _counted(server, timeout: float = 30.0) -> dict:
    """The status once the index is current and its count known."""
    deadline = time.monotonic() + timeout
    while True:
        status = wait_indexed(server)
        if status["documents"] is not None:
            return status
        assert time.monotonic() < deadline, f"document count still unknown after {timeout} s: {status}"
        time.sleep(0.05)


def test_document_count_exact_after_ingest_restart_upgrade_and_reindex(tmp_path):
    e = Emitter()
    runs = [emit(e, ContentRun("ops", f"quokka {i}", calls=[ToolCall("look", {"i": i}, result="quokka")]))
            for i in range(4)]
    server, stack, thread = start_server(tmp_path, [], 10.0)
    try:
        server.send(e.request())
        status = _counted(server)
        index_file = server.settings.search_index_path
        assert status["documents"] == _real_count(index_file) > 0
        answer = server.get("/api/search", q="quokka", **WINDOW).json()
        assert {r["trace_id"] for r in answer["results"]} == {r.trace_id for r in runs}
        assert set(answer["index"]) == set(IndexStatus.model_fields) == set(status)
        assert answer["index"]["documents"] == status["documents"]
        expected = status["documents"]
    finally:
        stop_server(server, stack, thread)

    with sqlite3.connect(index_file) as conn:  # the file as an earlier version left it: no counter
        conn.execute("DELETE FROM meta WHERE key = ?", (META_DOCUMENTS,))

    server, stack, thread = start_server(tmp_path, [], 10.0)
    try:
        status = _counted(server)
        assert status["documents"] == _real_count(index_file) == expected
        more = Emitter()
        extra = emit(more, ContentRun("ops", "quokka again"))
        server.send(more.request())
        status = _counted(server)
        assert status["documents"] == _real_count(index_file) == expected + 2  # its task and answer
        with server.client() as client:
            assert client.post("/api/search/reindex").status_code == 200
        status = _counted(server)
        assert status["built_at"] is not None
        assert status["documents"] == _real_count(index_file) == expected + 2
        found = server.get("/api/search", q="quokka", **WINDOW).json()
        assert {r["trace_id"] for r in found["results"]} == {r.trace_id for r in [*runs, extra]}
        assert found["index"]["documents"] == expected + 2
    finally:
        stop_server(server, stack, thread)
