"""ClickHouse's modules of the services' own tables (ingest/store/work.py): score configs,
annotation queues, evaluations, datasets, approvals, with DuckDB's function names and signatures.

Rules of this package: reads are plain SQL on a ClickHouseCursor (every statement `final = 1`, so
a replaced row version or a tombstone is never seen); writes never UPDATE or DELETE: a change is a
new row under a higher `revision`, a delete an `is_deleted` tombstone (ReplacingMergeTree(revision,
is_deleted), ingest/store/clickhouse/schema_work.py). A write function runs on the store's one work
thread (`ClickHouseStore.run_write`), so its reads and inserts have no other write of this node in
between; which node writes which table is in docs/design.md §3.
"""
