"""`steplens migrate`: copy a DuckDB store into ClickHouse (ingest/copy_store/copy.py)."""
