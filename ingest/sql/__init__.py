"""SQL over your traces (`POST /api/sql`, `steplens sql`): one read-only SELECT over documented views
bound to the caller's projects.

- views.py: the views (runs, spans, tool_calls, scores) and the project-bound CTEs behind them
- functions.py: the functions a query may call (an allow-list)
- check.py: parse (sqlglot), refuse what is not a read of the views, rewrite to the scoped CTEs
- run.py: the time limit, the first batch, the streamed rows under the row and byte limits
- encode.py: JSON, CSV and Arrow IPC answers, batch by batch
- cli.py: `steplens sql`, a client of the API (the server holds the DuckDB file)
"""
