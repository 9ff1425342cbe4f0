"""`steplens migrate`: copy a DuckDB store into ClickHouse (copy.py: what and how; cli.py: progress and exit codes)."""
