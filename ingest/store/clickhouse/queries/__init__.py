"""ClickHouse's read queries: one module per module of `ingest.queries`, same names, functions,
signatures and return types (the API calls them through `ingest.store.backend.queries_of`).

Rules of this package: `?` parameters only (the cursor binds them as typed server-side
parameters); identifiers only from module constants; every read of a ReplacingMergeTree table
goes through `FINAL`, so a retried span, a replaced score or a run rewritten by a late span is
counted once; aggregates that the API promises as exact figures use the interpolation DuckDB uses
(`quantileExactInclusive` = `quantile_cont`), and empty aggregates are NULL as in DuckDB.
A module missing here makes its endpoints answer 501 on the clickhouse store.
Writes of small services live beside their reads (views.py: saved views) and run through
`ClickHouseStore.run_write`, which accepts only functions of this package.
"""
