"""The ClickHouse storage backend: schema, transport (chDB or a server), cursor, load and upkeep.

Its SQL lives here (and under `queries/`); nothing outside ingest/store knows which backend runs.
"""

# The schema first: the parts' table modules (schema_*.py) build on its helpers, and it lists them.
from ingest.store.clickhouse import schema as _schema  # noqa: E402, F401
