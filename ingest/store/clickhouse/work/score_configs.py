"""ClickHouse form of `ingest.scores.config_store`: declaring a score config through the API.

`score_configs` is ReplacingMergeTree(updated_at) on (project, name): a redeclaration is a new row
that replaces the old one on read (FINAL), as DuckDB's delete + insert does in one transaction.
"""

from __future__ import annotations

from datetime import datetime

from ingest.scores.configs import ScoreConfig
from ingest.store.clickhouse.schema import SCORE_CONFIGS
from ingest.store.clickhouse.work.connection import WorkConnection


def upsert(conn: WorkConnection, project: str, config: ScoreConfig, now: datetime, by: str) -> None:
    """Declare (or redeclare) `config` for `project`; scores stored before keep their values."""
    conn.insert(SCORE_CONFIGS, [{
        "project": project, "name": config.name, "data_type": config.data_type.value, "min_value": config.min,
        "max_value": config.max, "categories": config.categories or [], "description": config.description,
        "updated_at": now, "updated_by": by,
    }])
