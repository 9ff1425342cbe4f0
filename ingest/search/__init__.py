"""Full-text search over span content: a SQLite FTS5 index in a sidecar file, kept by the writer.

The index is derived: spans are the truth, the index can be dropped and rebuilt (`steplens search
reindex`), and how far it lags behind the stored spans is reported with every answer. See design.md §4
"Full-text search". The query grammar (`index.query_words`) and the documents (`content.py`) are
shared with the ClickHouse store, whose index lives in ClickHouse (ingest/store/clickhouse/queries/search.py).
"""
