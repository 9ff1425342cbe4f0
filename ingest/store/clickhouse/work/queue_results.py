"""ClickHouse form of `ingest.queues.results`: who labelled what and how much people agree.

The one query is DuckDB's own (a plain SELECT of `queue_labels`, read FINAL by the ClickHouse
cursor, so a person's replaced decision and a deleted queue's tombstones are not seen); the
agreement statistics are shared (ingest/queues/agreement.py).
"""

from __future__ import annotations

from ingest.queues.results import Results, results

__all__ = ["Results", "results"]
