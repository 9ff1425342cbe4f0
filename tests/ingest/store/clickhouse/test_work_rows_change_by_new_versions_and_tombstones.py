"""The ClickHouse write connection (`run_write`) changes rows only as new versions and tombstones:
a rewrite changes exactly the current rows its WHERE names (even when the WHERE reads a column the
rewrite changes), a tombstone hides its row from every read, and an insert with a deduplication
token sent twice is stored once; a NULL in a column that cannot hold one is refused, not stored as
the type's default.

The failure this covers: a decision written over the wrong row (or none) because an alias of the
rewrite shadowed the column the WHERE tests, a deleted queue's items still read back, a retried
insert doubling a queue's items, or an approval's missing status silently stored as ''."""

from __future__ import annotations

from datetime import datetime

import pytest

from ingest.store.clickhouse.schema_work import APPROVALS, QUEUE_ITEMS
from ingest.store.clickhouse.work.connection import next_revision

T = datetime(2026, 1, 1)


def _item(trace_id: str, status: str = "pending") -> dict[str, object]:
    return {"project": "p", "queue": "q", "trace_id": trace_id, "run_start": T, "added_at": T, "source": "live",
            "status": status, "decided_at": None, "revision": next_revision(), "is_deleted": 0}


def test_rewrites_tombstones_and_tokens(open_ch_store) -> None:
    store = open_ch_store()

    def run(fn):
        return store.run_write(fn).result(30)

    def statuses(conn) -> dict[str, str]:
        return dict(conn.execute("SELECT trace_id, status FROM queue_items WHERE project = 'p'").fetchall())

    run(lambda conn: conn.insert(QUEUE_ITEMS, [_item("a"), _item("b"), _item("c", "done")]))
    # the WHERE tests `status`, the column the rewrite sets: only the pending rows named change
    run(lambda conn: conn.rewrite(QUEUE_ITEMS, "trace_id IN ('a', 'c') AND status = ?", ["pending"],
                                  {"status": "skipped", "decided_at": T}))
    assert run(statuses) == {"a": "skipped", "b": "pending", "c": "done"}
    run(lambda conn: conn.rewrite(QUEUE_ITEMS, "trace_id = ?", ["b"], {"is_deleted": 1}))
    assert run(statuses) == {"a": "skipped", "c": "done"}
    with store.read() as cur:  # every read of the store sees the same current rows
        assert cur.execute("SELECT count() FROM queue_items").fetchone()[0] == 2

    again = [_item("d")]
    for _ in range(2):  # the same insert retried with its token
        run(lambda conn: conn.insert(QUEUE_ITEMS, again, token="test:items:d"))
    assert run(lambda conn: conn.execute("SELECT count() FROM queue_items WHERE trace_id = 'd' SETTINGS final = 0"
                                         ).fetchone()[0]) == 1

    with pytest.raises(ValueError, match="approvals.status must not be NULL"):
        run(lambda conn: conn.insert(APPROVALS, [{"approval_id": "x", "project": "p", "status": None,
                                                  "tool_name": "t", "created_at": T, "revision": 1,
                                                  "is_deleted": 0}]))
