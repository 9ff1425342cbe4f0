"""`steplens export` as a user runs it (the console script in a subprocess) writes one readable file
per table with the rows the server holds, and prints what it wrote.

The failure this covers: the command's wiring (options, format names, the key variable) broken while
the function behind it still works.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ingest.config import ApiKey
from tests.ingest.export.seeded import seed

ROOT = Path(__file__).resolve().parents[3]
READ, ADMIN = "read-secret-0123456789", "admin-secret-0123456789"


def _export(api: str, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STEPLENS_API_KEY": READ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "steplens.cli", "export", "--api", api, "--out", str(out), *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def test_steplens_export_command_writes_readable_files(
    start_ingest_server: Callable[..., Any], tmp_path: Path
) -> None:
    srv = start_ingest_server(grpc_port=0, api_keys=[ApiKey(key=READ, project="P", scopes=["read"]),
                                                     ApiKey(key=ADMIN, project="P", scopes=["admin"])])
    sent = seed(srv.http_url, srv.store, key=ADMIN, score_key=ADMIN)

    done = _export(srv.http_url, tmp_path / "pq", "--format", "parquet")
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in (tmp_path / "pq").iterdir())
    assert files == ["runs.parquet", "scores.parquet", "spans.parquet"]
    spans = pq.read_table(tmp_path / "pq" / "spans.parquet").to_pylist()
    assert {(s["trace_id"], s["span_id"]) for s in spans} == sent.span_ids
    assert {r["trace_id"] for r in pq.read_table(tmp_path / "pq" / "runs.parquet").to_pylist()} == sent.trace_ids
    assert f"spans: {len(sent.span_ids):,} rows" in done.stderr

    otlp = _export(srv.http_url, tmp_path / "otlp", "--format", "otlp", "--since", "3650d")
    assert otlp.returncode == 0, otlp.stderr
    lines = (tmp_path / "otlp" / "spans.otlp.jsonl").read_text().splitlines()
    ids = {(s["traceId"], s["spanId"]) for line in lines for rs in json.loads(line)["resourceSpans"]
           for ss in rs["scopeSpans"] for s in ss["spans"]}
    assert ids == sent.span_ids

    bad = _export(srv.http_url, tmp_path / "bad", "--format", "csv")
    assert bad.returncode == 2 and "parquet, jsonl or otlp" in bad.stderr
