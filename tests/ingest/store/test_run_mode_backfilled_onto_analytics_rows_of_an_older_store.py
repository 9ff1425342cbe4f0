"""A store written before the run's mode reached the analytics rows had tool_calls, tool_carry,
run_models and tool_rollup without it: after the migration, every stored row carries its run's mode
(so /api/tools and /api/cost filter eval and shadow runs out of stores that already held them) and
the rollup, rebuilt with mode as a key, equals one built from scratch.

DuckDB only: it migrates an older DuckDB file."""

from __future__ import annotations

from ingest.queries.filters import CommonFilters
from ingest.queries.tools import tool_rows
from ingest.schema import (
    ANALYTICS_RUN_MODE,
    TOOL_ROLLUP_KEYS,
    TOOL_ROLLUP_NUMBERS,
    V8_ROLLUP_FACTS,
    tool_rollup_rows,
)
from tests.ingest.store.test_tool_rollup_equals_a_scan_of_tool_calls import (
    batched,
    load,
    reference,
    single_span_requests,
)

TABLES = ("tool_calls", "tool_carry", "run_models")


def test_stored_rows_take_their_runs_mode_and_the_rollup_is_rebuilt() -> None:
    conn = load(batched(single_span_requests(), 100_000, None))
    # The store as it was: no mode on the analytics rows, the rollup keyed without it.
    for table in (*TABLES, "tool_rollup"):
        conn.execute(f"ALTER TABLE {table} DROP COLUMN mode")
    conn.execute("DELETE FROM tool_rollup")
    old = tool_rollup_rows("SELECT *, 1 AS sign FROM tool_calls", "SELECT *, 1 AS sign FROM tool_carry", V8_ROLLUP_FACTS)
    conn.execute(f"INSERT INTO tool_rollup BY NAME SELECT * FROM ({old})")

    conn.execute("BEGIN TRANSACTION")
    for statement in ANALYTICS_RUN_MODE:
        conn.execute(statement)
    conn.execute("COMMIT")

    modes = dict(conn.execute("SELECT mode, count(*) FROM runs GROUP BY mode").fetchall())
    assert modes.get("eval") and modes.get("shadow") and modes.get(None), modes
    for table in TABLES:
        wrong = conn.execute(
            f"SELECT count(*) FROM {table} x JOIN runs r USING (project, trace_id) "
            "WHERE x.mode IS DISTINCT FROM r.mode"
        ).fetchall()[0][0]
        assert wrong == 0, table
    columns = ", ".join((*TOOL_ROLLUP_KEYS, *TOOL_ROLLUP_NUMBERS))
    order = ", ".join(TOOL_ROLLUP_KEYS)
    stored = conn.execute(f"SELECT {columns} FROM tool_rollup ORDER BY {order}").fetchall()
    scratch = tool_rollup_rows("SELECT *, 1 AS sign FROM tool_calls", "SELECT *, 1 AS sign FROM tool_carry")
    assert stored == conn.execute(f"SELECT {columns} FROM ({scratch}) ORDER BY {order}").fetchall()

    for modes_in_scope in (frozenset({"eval"}), frozenset({"live"}), None):
        filters = CommonFilters(modes=modes_in_scope)
        expected, _ = reference(conn, filters)
        got = {s["tool"]: s["calls"] for s in tool_rows(conn.cursor(), filters).stats}
        assert got == {tool: row["calls"] for tool, row in expected.items()}, modes_in_scope
    every_mode = tool_rows(conn.cursor(), CommonFilters(modes=None)).stats
    assert sum(s["calls"] for s in every_mode) == conn.execute("SELECT count(*) FROM tool_calls").fetchall()[0][0]
    conn.close()
