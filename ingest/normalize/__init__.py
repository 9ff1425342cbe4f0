"""OTLP spans → rows of the `spans` table, whatever convention the client follows (design.md §3).

Public API: `spans_table` (a whole request, for the store's writer thread) and `normalize_span`
(one span, for tests and debugging); `SPANS_SCHEMA` is the Arrow schema of the result.
"""

from ingest.normalize.classify import operation_class
from ingest.normalize.columns import SPANS_SCHEMA
from ingest.normalize.table import normalize_span, spans_table

__all__ = ["SPANS_SCHEMA", "normalize_span", "operation_class", "spans_table"]
