"""The search index is derived and may lag, but nothing acknowledged is lost: while the index cannot be
written, spans are stored and queryable, the lag (spans waiting, the oldest's age, the error) is visible
on /api/search/status, and once it can be written again it catches up by itself. A lost index file is
rebuilt from the stored spans at the next start, and `POST /api/search/reindex` rebuilds it on demand."""

from __future__ import annotations

import shutil
import time

from tests.ingest.api.content_runs import ContentRun, ToolCall, emit, wait_indexed
from tests.ingest.api.harness import start_server, stop_server
from tests.ingest.api.otlp_runs import Emitter

WINDOW = {"since": "2000-01-01T00:00:00Z"}


def _found(server, q: str) -> set[str]:
    r = server.get("/api/search", q=q, **WINDOW)
    assert r.status_code == 200, r.text
    return {x["trace_id"] for x in r.json()["results"]}


def test_unwritable_index_lags_visibly_then_catches_up(tmp_path):
    blocked = tmp_path / "index-is-a-directory"
    blocked.mkdir()  # SQLite cannot open a directory as its database file
    server, stack, thread = start_server(tmp_path, [], 10.0, search_index=blocked)
    try:
        e = Emitter()
        run = emit(e, ContentRun("ops", "the platypus left", calls=[ToolCall("track", {"id": 3}, result="platypus")]))
        server.send(e.request())
        runs = server.get("/api/runs", **WINDOW).json()["runs"]
        assert [r["trace_id"] for r in runs] == [run.trace_id]  # stored and queryable meanwhile
        status = server.get("/api/search/status").json()
        assert status["pending_spans"] == 3  # the run, its step and its tool call: every stored span waits
        deadline = time.monotonic() + 10
        while status["error"] is None and time.monotonic() < deadline:
            time.sleep(0.05)
            status = server.get("/api/search/status").json()
        assert status["error"] and "unable to open" in status["error"]
        assert _found(server, "platypus") == set()
        time.sleep(0.2)
        assert server.get("/api/search/status").json()["lag_s"] > 0
        shutil.rmtree(blocked)  # the disk takes writes again
        status = wait_indexed(server, timeout=40)
        assert status["error"] is None and status["lag_s"] == 0
        assert _found(server, "platypus") == {run.trace_id}
    finally:
        stop_server(server, stack, thread)


def test_lost_index_rebuilt_at_start_and_reindex_rebuilds_on_demand(tmp_path):
    e = Emitter()
    runs = [emit(e, ContentRun("ops", f"kangaroo number {i}")) for i in range(3)]
    server, stack, thread = start_server(tmp_path, [], 10.0)
    try:
        server.send(e.request())
        wait_indexed(server)
        assert _found(server, "kangaroo") == {r.trace_id for r in runs}
        index_file = server.settings.search_index_path
    finally:
        stop_server(server, stack, thread)
    for suffix in ("", "-wal", "-shm"):
        index_file.with_name(index_file.name + suffix).unlink(missing_ok=True)

    server, stack, thread = start_server(tmp_path, [], 10.0)
    try:
        wait_indexed(server)
        assert _found(server, "kangaroo") == {r.trace_id for r in runs}  # rebuilt from the stored spans
        before = server.get("/api/search/status").json()["documents"]
        assert before == 3 * 2  # each run's task and answer
        with server.client() as client:
            answer = client.post("/api/search/reindex")
        assert answer.status_code == 200, answer.text
        assert answer.json()["started"] is True
        status = wait_indexed(server)
        assert status["built_at"] is not None and status["documents"] == before
        assert _found(server, "kangaroo") == {r.trace_id for r in runs}
    finally:
        stop_server(server, stack, thread)
