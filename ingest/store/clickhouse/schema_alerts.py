"""ClickHouse tables of alerting: `alert_state` and `alert_events`, DuckDB's columns (ingest/schema.py).

Why these engines (ClickHouse has no transactions, and the guarantee is "a worker restart or two
writes of the same evaluation never notify twice"):
- `alert_state`: ReplacingMergeTree(revision) ordered by (rule, subject), DuckDB's columns plus
  `revision`: each evaluation inserts every subject's new state with the stored state's revision
  + 1; reads (FINAL) see the latest one per (rule, subject), so a restarted worker resumes from the
  stored firing state and cooldown clock instead of firing again. A counter and not a time: a
  worker clock stepping back must not hide newer states (it would resolve the same alert on every
  evaluation), and the same evaluation written twice gets the same revision (identical rows).
- `alert_events`: ReplacingMergeTree ordered by (rule, subject, time, kind), the identity of an
  event (its id is a digest of the same four, ingest/alerts/state.py `event_id`): the same
  evaluation written twice is one event, whether the second insert is dropped by block
  deduplication (`non_replicated_deduplication_window`, on every table of this backend) or kept
  until a merge (FINAL collapses it).
Neither table has a TTL: as on DuckDB, alert history is not aged out by `retention_days`.

The tables are built by functions that import schema.py's helpers when called, because schema.py
lists them in its TABLES (either module may be imported first).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ingest.store.clickhouse.schema import Table


def alert_tables() -> tuple[Table, Table]:
    """(alert_state, alert_events)."""
    from ingest.store.clickhouse.schema import Table, _columns

    state = Table(
        "alert_state",
        _columns(
            "rule str, subject str, status str, since ts, last_notified ts?, last_evaluated ts, value f64?, summary str?, "
            "revision u64"
        ),
        order_by=("rule", "subject"),
        version="revision",
        shard_key="cityHash64(rule)",
    )
    events = Table(
        "alert_events",
        _columns(
            "event_id str, time ts, rule str, subject str, kind str, severity str, summary str, value f64?, "
            "details json?, evidence strs, channels strs"
        ),
        order_by=("rule", "subject", "time", "kind"),
        shard_key="cityHash64(rule)",
    )
    return state, events


def alerts_migration(database: str, cluster: str | None = None) -> list[str]:
    """The migration creating the alert tables (appended to schema.py's `migrations()`)."""
    from ingest.store.clickhouse.schema import create_table

    return [statement for table in alert_tables() for statement in create_table(table, database, cluster)]


ALERT_STATE, ALERT_EVENTS = alert_tables()
