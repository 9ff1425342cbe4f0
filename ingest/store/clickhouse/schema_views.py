"""ClickHouse schema for saved views (`/api/views`): the tombstone column that makes a delete a write.

Why a column and not a new engine: `saved_views` shipped in the first migration as
ReplacingMergeTree(updated_at) keyed (project, view_id), and an engine cannot be altered in
place; dropping and recreating the table under running nodes could lose a view saved in between.
So an update inserts the whole row again with a later `updated_at` (FINAL keeps the newest row of
a view), and a delete inserts that row with `is_deleted = 1`; reads skip tombstones
(ingest/store/clickhouse/queries/views.py). `ADD COLUMN IF NOT EXISTS` is idempotent, so two nodes
migrating together converge.
"""

from __future__ import annotations

TOMBSTONE = "is_deleted"


def _quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


def views_migration(database: str, cluster: str | None = None) -> list[str]:
    """The statements adding the tombstone column (with a cluster: to the local replicated table
    and to its Distributed table)."""
    tables = ["saved_views_local", "saved_views"] if cluster else ["saved_views"]
    on_cluster = f" ON CLUSTER {_quote(cluster)}" if cluster else ""
    return [
        f"ALTER TABLE {_quote(database)}.{_quote(table)}{on_cluster} "
        f"ADD COLUMN IF NOT EXISTS {TOMBSTONE} UInt8 DEFAULT 0"
        for table in tables
    ]
