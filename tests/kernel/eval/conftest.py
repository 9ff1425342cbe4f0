"""Reuse the full ingest server fixture (real SpanStore on a temp DuckDB, ports 0)."""

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401
