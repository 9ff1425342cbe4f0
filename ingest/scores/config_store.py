"""Writing the API's score configs (`POST /api/score-configs`), on the store's writer thread.

A config is a small, rarely written row, so it goes straight into DuckDB through `run_write`
(committed in DuckDB's WAL before the answer) rather than through the spool like scores.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from ingest.scores.configs import ScoreConfig

_DELETE = "DELETE FROM score_configs WHERE project = ? AND name = ?"
_INSERT = """
INSERT INTO score_configs (project, name, data_type, min_value, max_value, categories, description, updated_at,
                           updated_by)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


def upsert(conn: duckdb.DuckDBPyConnection, project: str, config: ScoreConfig, now: datetime, by: str) -> None:
    """Declare (or redeclare) `config` for `project`; scores stored before keep their values."""
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute(_DELETE, [project, config.name])
        conn.execute(_INSERT, [project, config.name, config.data_type.value, config.min, config.max,
                               config.categories, config.description, now, by])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
