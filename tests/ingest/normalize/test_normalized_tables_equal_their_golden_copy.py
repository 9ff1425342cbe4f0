"""Every committed OTLP body normalizes to exactly the table recorded in `golden/spans.jsonl.gz`.

Why a golden copy: normalization is rewritten for speed (fewer per-span calls, columnar building,
other JSON encoders), and each rewrite must keep every value of every column the same for every
convention we have real bodies of: the captured framework fixtures, the shared official OpenAI
instrumentation fixture (when `../shared` is present) and the ingest benchmark's generated agent
runs. JSON columns are compared parsed (key order and spacing are not part of the contract), the
rest value by value, column by column, so a failure names the body, the row and the column.

Regenerate only for an intended change of what a span means (and say so in the commit):
    PYTHONPATH=$PWD .venv/bin/python -m tests.ingest.normalize.test_normalized_tables_equal_their_golden_copy
"""

from __future__ import annotations

import functools
import gzip
import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bench._ingest_payloads import agent_run, encode_spans
from ingest.normalize import spans_table
from ingest.normalize.values import out_of_range_counts
from ingest.otlp.decode import decode_body

ROOT = Path(__file__).resolve().parents[3]
FRAMEWORKS = ROOT / "tests" / "fixtures" / "frameworks"
# `shared/` sits beside the repository, or beside the directory of worktrees holding it.
SHARED_OPENAI = next(
    (
        path
        for path in (d / "shared" / "fixtures" / "otel-genai-openai" / "traces-001.bin" for d in ROOT.parents[:2])
        if path.is_file()
    ),
    ROOT.parent / "shared" / "fixtures" / "otel-genai-openai" / "traces-001.bin",
)
GOLDEN = Path(__file__).resolve().parent / "golden" / "spans.jsonl.gz"
INGESTED_AT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
BENCH_T0_NS = 1_767_000_000_000_000_000
MAX_BODY = 1 << 28


def _bench_body(seed: int, runs: int) -> bytes:
    """What bench/_ingest_payloads.py sends, from a fixed seed and clock."""
    rng = random.Random(seed)
    spans = []
    for _ in range(runs):
        trace_id = rng.getrandbits(128).to_bytes(16, "big")
        spans.extend(agent_run(rng, trace_id, BENCH_T0_NS + rng.randint(0, 30_000) * 1_000_000))
    return encode_spans(spans)


def bodies() -> Iterator[tuple[str, ExportTraceServiceRequest]]:
    """(name, request) of every body the golden copy covers, in a stable order."""
    for manifest_path in sorted(FRAMEWORKS.glob("*/manifest.json")):
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        for body in manifest["bodies"]:
            if body["signal"] != "traces":
                continue
            raw = (manifest_path.parent / body["file"]).read_bytes()
            decoded = decode_body(raw, body["content_type"], body["content_encoding"], MAX_BODY)
            yield f"{manifest_path.parent.name}/{body['file']}", decoded.request
    if SHARED_OPENAI.is_file():
        yield "shared/otel-genai-openai/traces-001.bin", ExportTraceServiceRequest.FromString(
            SHARED_OPENAI.read_bytes()
        )
    for seed in (7, 8):
        yield f"bench/seed-{seed}", ExportTraceServiceRequest.FromString(_bench_body(seed, 12))


def _plain(value: object, field: pa.Field) -> object:
    """A cell as JSON-comparable data: JSON columns parsed, timestamps as ISO text."""
    if value is None:
        return None
    if isinstance(field.type, pa.JsonType) or str(field.type) == "extension<arrow.json>":
        return json.loads(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def table_record(name: str, table: pa.Table) -> dict:
    """One body's table as {name, schema, out_of_range, columns: {column: [cell, ...]}}."""
    columns = {}
    for field in table.schema:
        column = table.column(field.name)
        if isinstance(field.type, pa.ExtensionType):
            column = column.cast(field.type.storage_type)
        columns[field.name] = [_plain(v, field) for v in column.to_pylist()]
    return {
        "name": name,
        "schema": [f"{f.name}:{f.type}:{f.nullable}" for f in table.schema],
        "out_of_range": out_of_range_counts(table),
        "columns": columns,
    }


def current_records() -> list[dict]:
    return [table_record(name, spans_table("golden", request, INGESTED_AT)) for name, request in bodies()]


@functools.cache
def _golden() -> dict[str, dict]:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        return {record["name"]: record for record in map(json.loads, f)}


CURRENT = {record["name"]: record for record in current_records()}


def test_every_body_is_in_the_golden_copy() -> None:
    golden = _golden()
    missing = sorted(set(CURRENT) - set(golden))
    assert not missing, f"bodies without a golden table (regenerate on purpose only): {missing}"
    gone = sorted(n for n in set(golden) - set(CURRENT) if not n.startswith("shared/"))
    assert not gone, f"golden tables whose body is gone: {gone}"


@pytest.mark.parametrize("name", sorted(CURRENT))
def test_table_equals_its_golden_copy_column_by_column(name: str) -> None:
    expected = _golden()[name]
    actual = CURRENT[name]
    assert actual["schema"] == expected["schema"]
    assert actual["out_of_range"] == expected["out_of_range"]
    for column, want in expected["columns"].items():
        got = actual["columns"][column]
        assert len(got) == len(want), f"{name}: {column} has {len(got)} rows, golden {len(want)}"
        for row, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g == w, f"{name}: row {row} column {column}: {g!r} != golden {w!r}"


def write_golden() -> None:
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(GOLDEN, "wt", encoding="utf-8", compresslevel=9) as f:
        for record in current_records():
            f.write(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    write_golden()
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size:,} bytes)")
