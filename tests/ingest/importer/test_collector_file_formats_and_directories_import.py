"""Every saved-trace layout imports: Collector JSON lines (plain and gzipped), Collector `format: proto`,
a pretty-printed single request, a raw protobuf body; directories are searched recursively."""

from __future__ import annotations

import gzip
import json

from typer.testing import CliRunner

from steplens.cli import app
from tests.ingest.api.otlp_runs import Emitter, RunSpec
from tests.ingest.importer.collector_files import (
    FIXTURE,
    otlp_json,
    run_import,
    runs,
    trace_spans,
    write_framed_proto,
    write_jsonl,
)


def _emit(emitter: Emitter, agent: str, n: int, steps: int = 2) -> tuple[list, list[RunSpec]]:
    """n runs, one export request per run (one Collector line each)."""
    requests, specs = [], []
    for _ in range(n):
        specs.append(emitter.run(RunSpec(agent=agent, steps=steps)))
        requests.append(emitter.request())
    return requests, specs


def test_directory_of_mixed_formats_through_the_cli(ingest_server, tmp_path) -> None:
    api = ingest_server.http_url
    emitter = Emitter()
    plain, plain_specs = _emit(emitter, "plain_agent", 3)
    zipped, zipped_specs = _emit(emitter, "gzip_agent", 2, steps=3)
    framed, framed_specs = _emit(emitter, "proto_agent", 2)
    pretty, pretty_specs = _emit(emitter, "pretty_agent", 1)
    root = tmp_path / "saved"
    write_jsonl(root / "collector" / "traces.jsonl", plain)
    write_jsonl(root / "collector" / "2025" / "traces-rotated.jsonl.gz", zipped, gz=True)
    write_framed_proto(root / "proto" / "traces.pb", framed)
    (root / "pretty.json").write_text(json.dumps(otlp_json(pretty[0]), indent=2))
    (root / "proto" / "fixture.bin.gz").write_bytes(gzip.compress(FIXTURE.read_bytes()))
    (root / "README.txt").write_text("not a trace file; ignored")

    result = CliRunner().invoke(app, ["import", str(root), "--api", api])
    assert result.exit_code == 0, result.output
    assert "all spans stored" in result.output
    assert "5 file(s)" in result.output

    assert ingest_server.store.wait_loaded(10)
    by_agent: dict[str, list[dict]] = {}
    for run in runs(api):
        by_agent.setdefault(run["agent"], []).append(run)
    # the fixture: one weather_agent run and one standalone LLM call (a run without an agent)
    assert {a: len(v) for a, v in by_agent.items()} == {
        "plain_agent": 3, "gzip_agent": 2, "proto_agent": 2, "pretty_agent": 1, "weather_agent": 1, None: 1,
    }
    for spec in plain_specs + zipped_specs + framed_specs + pretty_specs:
        spans = trace_spans(api, spec.trace_id)
        assert len(spans) == 1 + 3 * spec.steps
        assert sorted(s["span_id"] for s in spans) == sorted({s["span_id"] for s in spans})


def test_hex_ids_in_json_are_the_ids_stored(ingest_server, tmp_path) -> None:
    """OTLP/JSON ids are hex (not protobuf-JSON base64): the stored trace and span ids are those hex strings."""
    emitter = Emitter()
    requests, specs = _emit(emitter, "hex_agent", 1)
    doc = otlp_json(requests[0])
    span_ids = {s["spanId"] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}
    path = write_jsonl(tmp_path / "one.jsonl", requests)
    summary, output = run_import(ingest_server.http_url, [path])
    assert summary.ok, output
    assert ingest_server.store.wait_loaded(10)
    spans = trace_spans(ingest_server.http_url, specs[0].trace_id)
    assert {s["span_id"] for s in spans} == span_ids
