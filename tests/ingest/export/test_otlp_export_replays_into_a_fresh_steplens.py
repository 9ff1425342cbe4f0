"""An OTLP export of one real server, imported into a fresh one, gives the same runs and spans.

The failure this covers: data could not leave steplens for another OTLP backend (the DuckDB file is
locked by the server and no route gave the stored spans back as OTLP). Here the export goes through
`steplens export --format otlp` (GET /api/export) and comes back in through `steplens import`
(POST /v1/traces), and every run and span the second server derives matches the first's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from ingest.export.cli import export_command
from ingest.export.formats import Format
from ingest.importer import import_command
from tests.ingest.api.harness import BACKENDS
from tests.ingest.export.seeded import seed


def _runs(base: str) -> dict[str, dict[str, Any]]:
    rows = httpx.get(base + "/api/runs", params={"mode": "all", "limit": 1000}, timeout=30).json()["runs"]
    # scores are not spans: OTLP carries none (the fresh server has none to show on its runs)
    return {r["trace_id"]: {k: v for k, v in r.items() if k != "scores"} for r in rows}


def _trace(base: str, trace_id: str) -> dict[str, Any]:
    r = httpx.get(f"{base}/api/traces/{trace_id}", timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("backend", BACKENDS)
def test_otlp_export_replays_into_a_fresh_steplens(
    start_ingest_server: Callable[..., Any], tmp_path: Path, monkeypatch: Any, backend: str,
) -> None:
    monkeypatch.delenv("STEPLENS_API_KEY", raising=False)
    source = start_ingest_server(grpc_port=0, store=backend)  # exported from either store, into DuckDB
    sent = seed(source.http_url, source.store, plain_runs=3)
    sent_b = seed(source.http_url, source.store, agent="ops_agent", plain_runs=1, day=1)

    assert export_command(source.http_url, tmp_path, Format.OTLP, None, None, ["runs", "spans"]) == 0
    exported = tmp_path / "spans.otlp.jsonl"
    assert not (tmp_path / "runs.otlp.jsonl").exists()  # OTLP carries spans; runs are derived from them

    target = start_ingest_server(grpc_port=0, store="duckdb")  # one chDB per process: the target is DuckDB
    assert import_command([exported], target.http_url) == 0
    assert target.store.wait_loaded(30)

    before, after = _runs(source.http_url), _runs(target.http_url)
    assert set(before) == set(after) == sent.trace_ids | sent_b.trace_ids
    for trace_id, run in before.items():
        assert after[trace_id] == run, f"run {trace_id} differs after the replay"
        a, b = _trace(source.http_url, trace_id), _trace(target.http_url, trace_id)
        assert len(a["spans"]) == len(b["spans"]) > 0
        assert b["spans"] == a["spans"], f"spans of {trace_id} differ after the replay"

    # what was sent, not only what the first server made of it: the typed attributes and the event
    refund = next(s for s in _trace(target.http_url, sent.content[0].trace_id)["spans"]
                  if s["span_id"] == sent.content[0].span_ids["refund"])
    assert refund["attributes"]["refund.amount"] == 750
    assert refund["attributes"]["refund.ratio"] == 0.25
    assert refund["attributes"]["refund.tags"] == ["vip", "eu"]
    assert refund["attributes"]["refund.manual"] is True
    failed = next(s for s in _trace(target.http_url, sent.content[1].trace_id)["spans"]
                  if s["span_id"] == sent.content[1].span_ids["refund"])
    assert failed["status"] == "ERROR" and failed["status_message"] == "payment gateway timeout after 30 s"
    assert [e["name"] for e in failed["events"]] == ["exception"]
    stored = {(s["trace_id"], s["span_id"]) for t in sent.trace_ids | sent_b.trace_ids
              for s in [{"trace_id": t, **x} for x in _trace(target.http_url, t)["spans"]]}
    assert stored == sent.span_ids | sent_b.span_ids
