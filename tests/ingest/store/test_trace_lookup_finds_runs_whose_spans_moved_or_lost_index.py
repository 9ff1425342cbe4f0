"""Finding a run by trace id through `trace_index` never misses a run the runs table has.

The index row records the trace's first span start when the run row was created and the lookup
reads runs only around that instant. That must hold when later batches move the run's extent
(an earlier span arriving late, a root ending later), for the same trace id in two projects, and
when the index row is missing (the fallback scan); unknown ids find nothing. The run's exact
span extent then fetches the whole trace.

DuckDB only: DuckDB's trace index (ClickHouse finds a trace by its ordering key).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import pytest

from ingest.normalize import spans_table
from ingest.queries.runs import find_runs_by_trace
from ingest.queries.traces import trace_spans
from ingest.store.loading import ensure_position_row, load_batch
from ingest.store.migrate import migrate
from ingest.store.spool import Position
from tests.ingest.store.otlp_build import T0, S, agent_run, new_trace_id, request


@pytest.fixture
def conn():
    db = duckdb.connect()
    migrate(db)
    ensure_position_row(db, datetime.now(UTC).replace(tzinfo=None))
    yield db
    db.close()


def send(conn: duckdb.DuckDBPyConnection, spans: list[S], project: str = "p") -> None:
    now = datetime.now(UTC)
    load_batch(conn, spans_table(project, request(spans), now), Position(0, 0), now.replace(tzinfo=None))


def test_run_found_after_its_extent_moved_both_ways(conn):
    # Other runs around it, so the bounded read has something to skip.
    for i in range(50):
        root, children = agent_run(start=T0 + timedelta(minutes=i))
        send(conn, [root, *children])
    tid = new_trace_id()
    root, children = agent_run(trace_id=tid, start=T0 + timedelta(minutes=20), steps=3)
    send(conn, children[3:6])  # the middle step first: the index's start is that step's start
    send(conn, children[6:])
    # a span that started 30 minutes before anything seen so far, and the root ending much later
    early = S(
        tid, "early", parent=root.span_id, start=T0 - timedelta(minutes=10), duration=timedelta(seconds=1)
    )
    root.duration = timedelta(hours=2)
    send(conn, [early, *children[:3], root])

    [run] = find_runs_by_trace(conn.cursor(), tid, None)
    assert run["span_count"] == 1 + 9 + 1 and run["agent"] == "support_agent"
    assert run["span_start"] == early.start.replace(tzinfo=None)
    assert conn.execute("SELECT count(*) FROM trace_index WHERE trace_id = ?", [tid]).fetchone()[0] == 1
    # the run's exact extent (no slack) holds every span of the trace
    spans = trace_spans(conn.cursor(), tid, "p", run["span_start"], run["span_end"], run["span_count"])
    assert spans.used_window and len(spans.rows) == 11


def test_same_trace_id_in_two_projects_and_project_filter(conn):
    tid = new_trace_id()
    for project, start in (("a", T0), ("b", T0 + timedelta(days=3))):
        root, children = agent_run(trace_id=tid, start=start)
        send(conn, [root, *children], project=project)
    cur = conn.cursor()
    assert [r["project"] for r in find_runs_by_trace(cur, tid, None)] == ["a", "b"]
    assert [r["project"] for r in find_runs_by_trace(cur, tid, frozenset({"b"}))] == ["b"]
    assert find_runs_by_trace(cur, tid, frozenset()) == []


def test_missing_index_row_falls_back_and_unknown_ids_find_nothing(conn):
    tid = new_trace_id()
    root, children = agent_run(trace_id=tid)
    send(conn, [root, *children])
    conn.execute("DELETE FROM trace_index")
    [run] = find_runs_by_trace(conn.cursor(), tid, None)
    assert run["trace_id"] == tid
    assert find_runs_by_trace(conn.cursor(), new_trace_id(), None) == []
