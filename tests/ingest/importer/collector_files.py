"""Trace files as real tools write them, built from real SDK spans, plus helpers to import and query.

No Collector runs here, so its `file` exporter output is reproduced from its documented format:
JSON lines, one OTLP/JSON `ExportTraceServiceRequest` per line (camelCase, hex ids, int64 as
strings, enums as integers, as pdata's JSON marshaler writes them), or with `format: proto`
each protobuf message preceded by its length as a 4-byte big-endian integer.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from rich.console import Console

from ingest.importer import ImportOptions, ImportSummary, import_paths

FIXTURE = Path("/work/shared/fixtures/otel-genai-openai/traces-001.bin")


def otlp_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """OTLP/JSON of `request` as the OTLP spec (and the Collector) writes it: ids in hex."""
    doc = json_format.MessageToDict(request, use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
                for link in span.get("links", []):
                    for key in ("traceId", "spanId"):
                        if key in link:
                            link[key] = base64.b64decode(link[key]).hex()
    return doc


def jsonl(requests: Sequence[ExportTraceServiceRequest]) -> bytes:
    return b"".join(json.dumps(otlp_json(r), separators=(",", ":")).encode() + b"\n" for r in requests)


def write_jsonl(path: Path, requests: Sequence[ExportTraceServiceRequest], *, gz: bool = False) -> Path:
    data = jsonl(requests)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def write_framed_proto(path: Path, requests: Sequence[ExportTraceServiceRequest]) -> Path:
    """The Collector file exporter's `format: proto` layout."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for r in requests:
            body = r.SerializeToString()
            f.write(struct.pack(">I", len(body)) + body)
    return path


def quiet_console() -> Console:
    return Console(file=io.StringIO(), width=400, color_system=None)


def run_import(
    api: str, paths: Sequence[Path], api_key: str | None = None, **options: Any
) -> tuple[ImportSummary, str]:
    """Import through the real HTTP path; returns the summary and everything printed."""
    out = io.StringIO()
    console = Console(file=out, width=400, color_system=None)
    summary = import_paths(list(paths), api, api_key=api_key, options=ImportOptions(**options), console=console)
    return summary, out.getvalue()


def runs(api: str, api_key: str | None = None, **params: Any) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    response = httpx.get(f"{api}/api/runs", params={"limit": 500, **params}, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["runs"]


def trace_spans(api: str, trace_id: str, api_key: str | None = None) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    response = httpx.get(f"{api}/api/traces/{trace_id}", headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["spans"]


def stored_span_count(api: str, api_key: str | None = None) -> int:
    return sum(len(trace_spans(api, r["trace_id"], api_key)) for r in runs(api, api_key))
