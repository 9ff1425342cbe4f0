"""The durable span store: spool + group commit + a single DuckDB writer. See store.py."""

from ingest.store.reader import QueryTimeout
from ingest.store.stats import StoreStats
from ingest.store.store import SpanStore, default_normalizer

__all__ = ["QueryTimeout", "SpanStore", "StoreStats", "default_normalizer"]
