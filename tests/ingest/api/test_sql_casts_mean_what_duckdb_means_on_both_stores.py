"""`CAST` in `POST /api/sql` means DuckDB's CAST on both stores: a value that does not convert is an
error (400), not a silent NULL; NULL stays NULL; `TRY_CAST` is the one that gives NULL; a TIMESTAMP
keeps its microseconds.

The failure this covers: on ClickHouse the transpiled `CAST(x AS Nullable(T))` turned every bad value
into NULL (ClickHouse's TRY_CAST), so `sum(CAST(attributes->>'n' AS INTEGER))` quietly skipped rows
that DuckDB refuses, and a cast to TIMESTAMP cut the time to whole seconds."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.sql_helpers import post_sql, rows, send_runs


@pytest.fixture(scope="module", params=BACKENDS)
def base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from ingest.config import Settings
    from tests.ingest.conftest import _ServerThread

    tmp = tmp_path_factory.mktemp(f"casts-{request.param}")
    values: dict[str, Any] = {"host": "127.0.0.1", "grpc_port": 0, "normalize_processes": 0,
                              "db": tmp / "steplens.duckdb", "store": request.param}
    if request.param == "clickhouse":
        values["clickhouse_url"] = f"chdb://{tmp / 'clickhouse'}"
    server = _ServerThread(Settings(**values))
    srv = server.start()
    send_runs(srv.http_url)
    assert srv.store.wait_loaded(30)
    yield srv.http_url
    server.stop()


def test_a_value_that_does_not_convert_is_a_400(base: str) -> None:
    r = post_sql(base, "SELECT CAST(name AS INTEGER) FROM spans")
    assert r.status_code == 400, r.text


def test_null_casts_to_null_and_numbers_convert(base: str) -> None:
    assert rows(base, "SELECT CAST(NULL AS INTEGER), CAST('41' AS INTEGER) + 1, CAST('1.5' AS DOUBLE), "
                      "CAST(7 AS VARCHAR)") == [[None, 42, 1.5, "7"]]
    # a nullable column: the NULL rows stay NULL, the others convert (no error from the NULLs)
    got = rows(base, "SELECT CAST(CASE WHEN steps > 1 THEN CAST(steps AS VARCHAR) END AS INTEGER) AS s "
                     "FROM runs ORDER BY s NULLS FIRST")
    assert got == [[None], [2], [2], [2], [3]]


def test_try_cast_gives_null_for_what_does_not_convert(base: str) -> None:
    assert rows(base, "SELECT count(*), count(TRY_CAST(name AS INTEGER)) FROM spans WHERE operation = 'agent'") == [
        [5, 0]]


def test_a_timestamp_keeps_its_microseconds(base: str) -> None:
    [[text]] = rows(base, "SELECT CAST(CAST('2026-01-02 03:04:05.123456' AS TIMESTAMP) AS VARCHAR)")
    assert text == "2026-01-02 03:04:05.123456"
