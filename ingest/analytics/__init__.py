"""Regression statistics over the runs table: window-vs-baseline and release-vs-release comparisons,
and a CUSUM drift detector on mean steps per run. Pure computation over samples lives in `stats`,
`drift` and `findings`; `compare` fetches the samples through `ingest.queries.regressions`."""
