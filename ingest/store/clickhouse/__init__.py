"""The ClickHouse storage backend: schema, transport (chDB or a server), cursor, load and upkeep.

Its SQL lives here (and under `queries/`); nothing outside ingest/store knows which backend runs.
"""
