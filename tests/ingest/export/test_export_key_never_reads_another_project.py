"""A read key of project A exports only A's runs, spans and scores, in every format, whatever it asks.

The failure this covers: an export path that bypassed the key's project (the export reads whole
tables), handing project B's rows to A. Also: a refused key makes `steplens export` exit 2 with the
server's reason and write no file.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from ingest.config import ApiKey
from ingest.export.cli import export_command
from ingest.export.formats import Format
from tests.ingest.api.harness import BACKENDS
from tests.ingest.export.seeded import seed

SECRET = {name: f"{name}-secret-0123456789" for name in ("ingest_a", "read_a", "admin_a", "ingest_b", "admin_b",
                                                          "operator")}


def _keys() -> list[ApiKey]:
    scopes = {"ingest_a": ("A", "ingest"), "read_a": ("A", "read"), "admin_a": ("A", "admin"),
              "ingest_b": ("B", "ingest"), "admin_b": ("B", "admin"), "operator": ("ops", "operator")}
    return [ApiKey(key=SECRET[n], project=p, scopes=[s]) for n, (p, s) in scopes.items()]  # type: ignore[list-item]


def _rows(base: str, key: str, table: str, fmt: str, **params: Any) -> tuple[httpx.Response, list[dict[str, Any]]]:
    r = httpx.get(base + "/api/export", params={"table": table, "format": fmt, **params},
                  headers={"authorization": f"Bearer {SECRET[key]}"}, timeout=60)
    if r.status_code != 200 or not r.content:
        return r, []
    if fmt == "parquet":
        return r, pq.read_table(io.BytesIO(r.content)).to_pylist()
    if fmt == "otlp":
        return r, [{"trace_id": s["traceId"], "span_id": s["spanId"], "project": None}
                   for line in r.text.splitlines() for rs in json.loads(line)["resourceSpans"]
                   for ss in rs["scopeSpans"] for s in ss["spans"]]
    return r, [json.loads(line) for line in r.text.splitlines()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_export_key_never_reads_another_project(
    start_ingest_server: Callable[..., Any], tmp_path: Path, backend: str,
) -> None:
    srv = start_ingest_server(grpc_port=0, api_keys=_keys(), store=backend)
    a = seed(srv.http_url, srv.store, agent="agent_of_a", key=SECRET["ingest_a"], score_key=SECRET["admin_a"])
    b = seed(srv.http_url, srv.store, agent="agent_of_b", key=SECRET["ingest_b"], score_key=SECRET["admin_b"])

    for fmt in ("jsonl", "parquet", "otlp"):
        for table in ("runs", "spans", "scores") if fmt != "otlp" else ("spans",):
            for key in ("read_a", "admin_a"):
                r, rows = _rows(srv.http_url, key, table, fmt)
                assert r.status_code == 200, r.text
                assert rows and {row["trace_id"] for row in rows} <= a.trace_ids, (fmt, table, key)
                assert all(row["project"] in ("A", None) for row in rows)
                assert "agent_of_b" not in r.text and not any(t in r.text for t in b.trace_ids)
                for other in ("B", "B' OR '1'='1", "A') OR (1=1", "%"):  # narrows, never widens; a value, not SQL
                    narrowed, rows_b = _rows(srv.http_url, key, table, fmt, project=other)
                    assert narrowed.status_code == 200 and rows_b == []
                    assert narrowed.headers["x-steplens-export-rows"] == "0"
            _, everything = _rows(srv.http_url, "operator", table, fmt)
            assert {row["trace_id"] for row in everything} == (a.trace_ids | b.trace_ids if table != "scores" else
                                                              {s["trace_id"] for s in a.scores + b.scores})
    _, spans_a = _rows(srv.http_url, "read_a", "spans", "jsonl")
    assert {(s["trace_id"], s["span_id"]) for s in spans_a} == a.span_ids

    assert httpx.get(srv.http_url + "/api/export", timeout=30).status_code == 401
    no_read = httpx.get(srv.http_url + "/api/export", headers={"authorization": f"Bearer {SECRET['ingest_a']}"})
    assert no_read.status_code == 403

    # the CLI: the read key gets A's files; a refused key exits 2, says why and writes nothing
    out = tmp_path / "a"
    assert export_command(srv.http_url, out, Format.JSONL, None, None, ["runs", "spans", "scores"],
                          key=SECRET["read_a"], console=Console(file=io.StringIO())) == 0
    assert {json.loads(x)["trace_id"] for x in (out / "runs.jsonl").read_text().splitlines()} == a.trace_ids
    said = io.StringIO()
    refused = tmp_path / "refused"
    assert export_command(srv.http_url, refused, Format.PARQUET, "7d", None, ["runs"], key="not-a-key-0123456789",
                          console=Console(file=said, width=200)) == 2
    assert "401" in said.getvalue() and list(refused.iterdir()) == []
