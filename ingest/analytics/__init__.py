"""Regression statistics over the runs table: window-vs-baseline and release-vs-release comparisons,
and a CUSUM drift detector on mean steps per run. Pure computation over samples lives in `stats`,
`drift` and `findings`; `compare` fetches the samples through the store's `regressions` and
`score_metrics` query modules (`ingest.queries` on DuckDB, `ingest.store.clickhouse.queries` on
ClickHouse)."""
