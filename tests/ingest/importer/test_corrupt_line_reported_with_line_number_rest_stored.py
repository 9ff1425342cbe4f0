"""A bad line is reported as file:line with the reason and never stops the rest of the file (or of
the import); the exit code then says the import was incomplete."""

from __future__ import annotations

import gzip

from typer.testing import CliRunner

from steplens.cli import app
from tests.ingest.api.otlp_runs import Emitter, RunSpec
from tests.ingest.importer.collector_files import jsonl, run_import, runs


def _lines(n: int, agent: str) -> tuple[list[bytes], list[RunSpec]]:
    emitter = Emitter()
    specs, lines = [], []
    for _ in range(n):
        specs.append(emitter.run(RunSpec(agent=agent)))
        lines.append(jsonl([emitter.request()]))
    return lines, specs


def test_corrupt_line_is_reported_and_the_rest_stored(ingest_server, tmp_path) -> None:
    lines, specs = _lines(3, "survivor")
    corrupt = lines[1][: len(lines[1]) // 2] + b"\n"  # a line cut in half (a crashed writer)
    path = tmp_path / "traces.jsonl"
    path.write_bytes(lines[0] + corrupt + b"\n" + b'{"resourceMetrics": []}\n' + lines[2])

    summary, output = run_import(ingest_server.http_url, [path])
    assert summary.fatal is None
    assert summary.bad_records == 2
    wheres = [p.where for p in summary.problems]
    assert wheres == [f"{path}:2", f"{path}:4"]  # line 3 is blank: skipped, not an error
    assert "not valid JSON" in summary.problems[0].reason
    assert "not an OTLP trace export" in summary.problems[1].reason
    assert f"{path}:2" in output
    assert summary.spans_accepted == 2 * 7 and summary.exit_code == 1

    assert ingest_server.store.wait_loaded(10)
    stored = {r["trace_id"] for r in runs(ingest_server.http_url)}
    assert stored == {specs[0].trace_id, specs[2].trace_id}


def test_cli_prints_file_and_line_and_exits_non_zero(ingest_server, tmp_path) -> None:
    lines, specs = _lines(2, "cli_agent")
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress(b"{oops\n" + lines[0] + lines[1]))
    missing = tmp_path / "missing.jsonl"

    result = CliRunner().invoke(app, ["import", str(path), str(missing), "--api", ingest_server.http_url])
    assert result.exit_code == 1, result.output
    assert f"{path}:1" in result.output
    assert f"{missing}: no such file or directory" in result.output
    assert "14 accepted" in result.output and "2 unreadable" in result.output
    assert ingest_server.store.wait_loaded(10)
    assert {r["trace_id"] for r in runs(ingest_server.http_url)} == {s.trace_id for s in specs}


def test_truncated_gzip_and_protobuf_are_reported_not_raised(ingest_server, tmp_path) -> None:
    lines, specs = _lines(2, "cut_agent")
    whole = gzip.compress(lines[0] + lines[1])
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) - 40])
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x0a\xff\xff\xff\xff\x0f")

    summary, output = run_import(ingest_server.http_url, [cut, garbage])
    assert summary.fatal is None, output
    reasons = {p.where: p.reason for p in summary.problems}
    assert "read failed" in reasons[str(cut)]
    assert "not a valid OTLP ExportTraceServiceRequest protobuf" in reasons[str(garbage)]
    assert summary.exit_code == 1


def test_nothing_to_import_is_an_error_not_a_silent_success(tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("no traces here")
    result = CliRunner().invoke(app, ["import", str(tmp_path), "--api", "http://127.0.0.1:9"])
    assert result.exit_code == 2, result.output
    assert "no trace files" in result.output and "nothing to import" in result.output
