"""Export: the stored runs, spans and scores of a project, streamed out as Parquet, JSON lines or OTLP.

Why here and not a DuckDB `COPY`: the server holds the database file (one writing process per
file), so nothing else can open it; export goes through the server's read cursors, page by page,
like every other read, and obeys the caller's project like every other read path.

Parts: `tables` (what each table exports and the keyset page query), `formats` (the byte encoders),
`otlp` (stored spans back into OTLP export requests), `stream` (pages to bytes), `cli`
(`steplens export`, a client of `GET /api/export`).
"""
