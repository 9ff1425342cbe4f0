"""`steplens migrate --from <duckdb> --to chdb:///...` copies the store a real server made (the demo's
runs and scores, OTLP log records) into ClickHouse with the same counts and totals; re-running it,
with or without its resume file, stores nothing twice; and a file a running server holds is refused
with what to do. Embedded chDB is the ClickHouse engine in process, the same SQL as a server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import httpx
import pytest

from tests.support.genai_logs import chat_with_events, encode_logs, encode_spans
from tests.support.serve_process import clean_env, serving

pytest.importorskip("chdb")

MIGRATE = [sys.executable, "-m", "steplens.cli", "migrate"]
PROTOBUF = {"content-type": "application/x-protobuf"}
# what must be equal in both stores: (table, SQL aggregate), on DuckDB as is, on ClickHouse over FINAL
FIGURES = [
    ("spans", "count(), sum(cost_usd), sum(input_tokens), sum(output_tokens), count(DISTINCT trace_id)"),
    ("runs", "count(), sum(steps), sum(tool_calls), sum(CASE WHEN ok THEN 1 ELSE 0 END), sum(cost_usd)"),
    ("scores", "count(), sum(value_numeric), count(DISTINCT name)"),
    ("log_records", "count(), count(DISTINCT event_name)"),
    ("score_configs", "count()"),
    # derived per trace by the loader's shared rules; copied as DuckDB has them
    ("tool_calls", "count(), count(DISTINCT trace_id), sum(CASE WHEN is_error THEN 1 ELSE 0 END), sum(decision_cost_usd)"),
    ("run_models", "count(), count(DISTINCT model)"),
]


def _migrate(db: Path, target: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run the command; its stderr with rich's line wrapping undone (one space between words)."""
    done = subprocess.run([*MIGRATE, "--from", str(db), "--to", target, *extra], capture_output=True, text=True,
                          timeout=300, env=clean_env())
    done.stderr = " ".join(done.stderr.split())
    return done


def _duckdb_figures(db: Path) -> dict[str, tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return {t: tuple(conn.execute(f"SELECT {agg} FROM {t}").fetchone()) for t, agg in FIGURES}


def _same(figures: dict[str, tuple]) -> dict[str, object]:
    """The figures as an expectation: counts exactly, float sums to 1e-9 relative (two engines add the
    same doubles in different orders, so the last bits differ; rounding to a fixed place would flip
    at a boundary)."""
    return {t: pytest.approx(v, rel=1e-9, abs=1e-12) for t, v in figures.items()}


def _clickhouse_figures(path: Path | None, final: bool = True, transport: object = None) -> dict[str, tuple]:
    from ingest.store.clickhouse.transport import open_transport

    transport = transport or open_transport(f"chdb://{path}")
    try:
        out = {}
        for table, agg in FIGURES:
            row = transport.query_arrow(f"SELECT {agg} FROM {table}{' FINAL' if final else ''}").to_pylist()[0]
            out[table] = tuple(row.values())
        return out
    finally:
        transport.close()


def _raw_counts(path: Path) -> dict[str, int]:
    from ingest.store.clickhouse.transport import open_transport

    transport = open_transport(f"chdb://{path}")
    try:
        return {t: int(transport.query_arrow(f"SELECT count() FROM {t}").column(0)[0].as_py()) for t, _ in FIGURES}
    finally:
        transport.close()


def _documents_of_spans(db: Path) -> int:
    """The search documents the store's spans make (ingest/search/content.py: what both stores index)."""
    from ingest.search.index import span_docs

    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute(
            "SELECT project, trace_id, span_id, start_time, status_message, attributes, events FROM spans"
        ).fetchall()
    return sum(1 for r in rows for _ in span_docs(*r))


def _search_docs(path: Path, final: bool) -> int:
    from ingest.store.clickhouse.transport import open_transport

    transport = open_transport(f"chdb://{path}")
    try:
        table = transport.query_arrow(f"SELECT count() FROM search_docs{' FINAL' if final else ''}")
        return int(table.column(0)[0].as_py())
    finally:
        transport.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A DuckDB store written by a real `steplens serve`: demo runs with scores, plus OTLP log records."""
    root = tmp_path_factory.mktemp("store")
    db = root / "steplens.duckdb"
    with serving(["--db", str(db)], env={"STEPLENS_NORMALIZE_PROCESSES": "0"}) as node:
        demo = subprocess.run([sys.executable, "-m", "steplens.cli", "demo", "--endpoint", node.url, "--runs", "30",
                               "--days", "2", "--concurrency", "8"], capture_output=True, text=True, timeout=300,
                              env=clean_env())
        assert demo.returncode == 0, demo.stderr[-3000:]
        chat = chat_with_events()
        for path, body in (("/v1/traces", encode_spans(chat.spans)), ("/v1/logs", encode_logs(chat.logs))):
            r = httpx.post(node.url + path, content=body.SerializeToString(), headers=PROTOBUF)
            assert r.status_code == 200, r.text
        held = _migrate(db, f"chdb://{root / 'refused'}")
        assert held.returncode == 2, held.stderr
        assert "held by a running process" in held.stderr and "Stop the server" in held.stderr
        assert "Traceback" not in held.stderr
    return db  # the server stopped with SIGTERM: everything acknowledged is in the file


def test_migrate_copies_every_table_with_equal_counts_and_totals(store, tmp_path) -> None:
    target = tmp_path / "ch"
    done = _migrate(store, f"chdb://{target}", "--chunk-rows", "150")
    assert done.returncode == 0, done.stderr
    assert "spans" in done.stderr and "done:" in done.stderr
    expected = _duckdb_figures(store)
    assert expected["spans"][0] > 300 and expected["scores"][0] > 0 and expected["log_records"][0] >= 3
    assert _clickhouse_figures(target) == _same(expected)
    assert _search_docs(target, final=True) == _documents_of_spans(store) > 300  # searchable once copied


def test_rerunning_migrate_never_duplicates_with_or_without_its_resume_file(store, tmp_path) -> None:
    target = tmp_path / "ch"
    assert _migrate(store, f"chdb://{target}", "--chunk-rows", "150").returncode == 0
    first = _raw_counts(target)  # rows as inserted, not merged: a duplicate would show here
    again = _migrate(store, f"chdb://{target}", "--chunk-rows", "150")
    assert again.returncode == 0, again.stderr
    assert "done by an earlier run" in again.stderr and _raw_counts(target) == first
    store.with_name(store.name + ".migrate.json").unlink()  # no resume file: dedup tokens and the anti-join
    fresh = _migrate(store, f"chdb://{target}", "--chunk-rows", "150")
    assert fresh.returncode == 0, fresh.stderr
    assert "done by an earlier run" not in fresh.stderr
    assert _raw_counts(target) == first
    assert _clickhouse_figures(target) == _same(_duckdb_figures(store))


def test_a_copy_killed_midway_resumes_and_ends_with_each_row_once(store, tmp_path) -> None:
    import json
    import signal
    import time

    target = tmp_path / "ch"
    resume = store.with_name(store.name + ".migrate.json")
    resume.unlink(missing_ok=True)
    proc = subprocess.Popen([*MIGRATE, "--from", str(store), "--to", f"chdb://{target}", "--chunk-rows", "100"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env())
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                chunks = next(iter(json.loads(resume.read_text()).values()))["chunks"]
            except (FileNotFoundError, json.JSONDecodeError, StopIteration, KeyError):
                chunks = {}
            if chunks.get("spans", 0) >= 1:
                break
            time.sleep(0.005)
        assert proc.poll() is None, "the copy ended before it could be interrupted"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
    resumed = _migrate(store, f"chdb://{target}", "--chunk-rows", "100")
    assert resumed.returncode == 0, resumed.stderr
    assert "done by an earlier run" in resumed.stderr
    expected = _duckdb_figures(store)
    assert _raw_counts(target) == {t: v[0] for t, v in expected.items()}  # unmerged rows: nothing twice
    assert _clickhouse_figures(target) == _same(expected)
    assert _search_docs(target, final=False) == _documents_of_spans(store)


@pytest.mark.parametrize("to, message", [
    ("postgres://db:5432/x", "must be clickhouse://"),
    ("clickhouse://user:secret@host:8123/db", "STEPLENS_CLICKHOUSE_PASSWORD"),
    ("chdb://", "needs a data directory"),
])
def test_bad_target_is_one_clear_line(store, to, message) -> None:
    done = _migrate(store, to)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert "secret" not in done.stderr


def test_a_spool_with_unloaded_records_is_refused_until_the_server_loads_it(store, tmp_path) -> None:
    """What a kill -9 leaves: an acknowledged (fsynced) spool record the database does not have yet.
    A copy made now would miss it, so migrate refuses and says how to load it."""
    import shutil

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from ingest.store.spool import SpoolWriter, encode_record, list_segments

    db = tmp_path / "crashed.duckdb"
    shutil.copy(store, db)
    spool = db.with_name(db.name + ".spool")
    shutil.copytree(store.with_name(store.name + ".spool"), spool)
    writer = SpoolWriter(spool, max([0, *list_segments(spool)]) + 1)
    writer.append([encode_record("default", ExportTraceServiceRequest().SerializeToString())])
    writer.close()
    done = _migrate(db, f"chdb://{tmp_path / 'ch'}")
    assert done.returncode == 2, done.stderr
    assert "1 acknowledged record(s) not loaded" in done.stderr and f"steplens serve --db {db}" in done.stderr
    assert not (tmp_path / "ch").exists(), "refused before touching the target"


@pytest.mark.skipif(not os.environ.get("STEPLENS_TEST_CLICKHOUSE_URL"),
                    reason="STEPLENS_TEST_CLICKHOUSE_URL is not set (no ClickHouse server)")
def test_migrate_to_a_clickhouse_server_url(store) -> None:
    """`--to clickhouse://user@host:port/db` with the password from the environment."""
    import uuid
    from urllib.parse import urlsplit

    from ingest.store.clickhouse.transport import HttpTransport

    url = os.environ["STEPLENS_TEST_CLICKHOUSE_URL"]
    user = os.environ.get("STEPLENS_TEST_CLICKHOUSE_USER", "default")
    password = os.environ.get("STEPLENS_TEST_CLICKHOUSE_PASSWORD", "")
    parts = urlsplit(url)
    database = f"steplens_migrate_{uuid.uuid4().hex[:12]}"
    scheme = "clickhouses" if parts.scheme == "https" else "clickhouse"
    target = f"{scheme}://{user}@{parts.hostname}:{parts.port or 8123}/{database}"
    done = subprocess.run([*MIGRATE, "--from", str(store), "--to", target], capture_output=True, text=True,
                          timeout=300, env=clean_env({"STEPLENS_CLICKHOUSE_PASSWORD": password}))
    admin = HttpTransport(url, user, password, "default")
    try:
        assert done.returncode == 0, done.stderr
        assert _clickhouse_figures(None, transport=HttpTransport(url, user, password, database)) == _same(_duckdb_figures(store))
    finally:
        admin.command(f"DROP DATABASE IF EXISTS `{database}`")
        admin.close()


def test_missing_source_says_to_pass_the_servers_db(tmp_path) -> None:
    done = _migrate(tmp_path / "nope.duckdb", f"chdb://{tmp_path / 'ch'}")
    assert done.returncode == 2 and "--from" in done.stderr and "Traceback" not in done.stderr
