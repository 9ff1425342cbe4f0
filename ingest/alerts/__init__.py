"""Alerting: rules from steplens.toml, an evaluator the server runs on each rule's interval, state
and history in DuckDB (written on the store's single writer), and log/webhook channels that never
block ingest."""
