"""The read side's SQL: every query the query API runs, parameterized, in one package.

Kept apart from the HTTP layer so the SQL can be tested against a real DuckDB without a server,
and so that a reviewer looking for injection risks has exactly one place to read.
"""
