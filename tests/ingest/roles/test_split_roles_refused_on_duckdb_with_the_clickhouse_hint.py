"""`steplens serve --role ingest|api|worker` on DuckDB must stop at startup with one line saying to use
`--store clickhouse`: DuckDB allows one process per database file, so split nodes could never share
it, and a second process failing later on a locked file would be a far worse message."""

from __future__ import annotations

import pytest

from tests.support.serve_process import run_serve


@pytest.mark.parametrize("role", ["ingest", "api", "worker"])
def test_split_role_on_duckdb_exits_2_naming_the_clickhouse_store(tmp_path, role) -> None:
    db = tmp_path / "s.duckdb"
    done = run_serve(["--role", role, "--db", str(db), "--port", "0", "--grpc-port", "0"])
    assert done.returncode == 2, done.stderr
    assert f"--role {role}" in done.stderr and "--store clickhouse" in done.stderr
    assert "--role all" in done.stderr and "Traceback" not in done.stderr
    assert not db.exists(), "the refusal must come before the store opens (and creates) the database"


def test_role_from_the_environment_is_refused_the_same_way(tmp_path) -> None:
    done = run_serve(["--db", str(tmp_path / "s.duckdb"), "--port", "0", "--grpc-port", "0"],
                     env={"STEPLENS_ROLE": "worker"})
    assert done.returncode == 2 and "--store clickhouse" in done.stderr, done.stderr


def test_unknown_role_lists_the_roles(tmp_path) -> None:
    done = run_serve(["--role", "reader", "--db", str(tmp_path / "s.duckdb"), "--port", "0", "--grpc-port", "0"])
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert all(role in done.stderr for role in ("'all'", "'ingest'", "'api'", "'worker'")), done.stderr
