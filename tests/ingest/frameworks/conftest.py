"""Fixtures: a real steplens server per test, the same as the query API tests use."""

from tests.ingest.api.conftest import backend, make_server, server  # noqa: F401 - pytest fixtures, re-exported
