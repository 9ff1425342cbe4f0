"""kill -9 a `steplens serve --store clickhouse` process during sustained OTLP load from the real
exporter; after a restart every span that got a 200 is stored exactly once, with its run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ingest.store import deadletter
from ingest.store.clickhouse.transport import ChdbTransport
from ingest.store.clickhouse.writer import read_inflight, read_position
from ingest.store.spool import list_segments

REPO = Path(__file__).resolve().parents[4]
LISTENING = re.compile(r"listening: HTTP (http://[0-9.]+:[0-9]+)")
SPANS_PER_TRACE = 4


def _serve(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "STEPLENS_NORMALIZE_PROCESSES": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from steplens.cli import main; main()", "serve", "--port", "0", "--grpc-port", "0",
         "--db", str(tmp / "steplens.duckdb"), "--store", "clickhouse", "--clickhouse-url", f"chdb://{tmp / 'ch'}"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, cwd=REPO,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 90
    for raw in proc.stderr:
        match = LISTENING.search(raw.decode(errors="replace"))
        if match:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # drain
            return proc, match.group(1)
        assert time.monotonic() < deadline, "server did not start"
    raise AssertionError(f"server exited with {proc.wait()} before listening")


def _trace() -> list:
    """One trace of SPANS_PER_TRACE spans made by the OTel SDK (root + children)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "crash"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("crash-test")
    with tracer.start_as_current_span("invoke_agent crash", attributes={"gen_ai.operation.name": "invoke_agent",
                                                                         "gen_ai.agent.name": "crash"}):
        for i in range(SPANS_PER_TRACE - 1):
            with tracer.start_as_current_span(f"step {i}"):
                pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def _load(url: str, acked: set[tuple[str, str]], stop: threading.Event, sent: list[list]) -> None:
    """Export two new traces per request; every third request re-sends an earlier one (a client's
    retry after a lost answer, also across the restart), which must not be stored twice."""
    exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=5)
    n = 0
    while not stop.is_set():
        n += 1
        spans = sent[n % len(sent)] if sent and n % 3 == 0 else _trace() + _trace()
        sent.append(spans)
        try:
            result = exporter.export(spans)
        except Exception:  # noqa: BLE001 - the server died mid-request: not acked
            continue
        if result is SpanExportResult.SUCCESS:
            acked.update((f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans)


def test_kill_9_under_load_then_restart_stores_every_acked_span_once(tmp_path: Path) -> None:
    acked: set[tuple[str, str]] = set()
    sent: list[list] = []
    for _round in range(2):
        proc, url = _serve(tmp_path)
        stop = threading.Event()
        senders = [threading.Thread(target=_load, args=(url, acked, stop, sent), daemon=True) for _ in range(3)]
        before = len(acked)
        for t in senders:
            t.start()
        deadline = time.monotonic() + 60
        while len(acked) < before + 40 * SPANS_PER_TRACE and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        stop.set()
        for t in senders:
            t.join(20)
        # a sender still retrying could reach the next server and be acknowledged after its check
        assert not any(t.is_alive() for t in senders), "a sender outlived its server"
        assert len(acked) > before, "no export was acknowledged before the kill"
    proc, _url = _serve(tmp_path)  # replays the spool into ClickHouse before it listens
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0

    transport = ChdbTransport(str(tmp_path / "ch"))
    try:
        rows = transport.query_arrow(
            "SELECT trace_id, span_id, count() AS n FROM spans GROUP BY trace_id, span_id"
        ).to_pylist()
        runs = transport.query_arrow("SELECT trace_id, span_count FROM runs FINAL").to_pylist()
    finally:
        transport.close()
    stored = {(r["trace_id"], r["span_id"]): r["n"] for r in rows}
    missing = [key for key in acked if key not in stored]
    spool = tmp_path / "steplens.duckdb.spool"
    assert not missing, (  # what the spool says helps tell a lost span from one never loaded
        f"{len(missing)} acknowledged spans lost; dead letters: {[d.error[:200] for d in deadletter.list_dead(spool)]}; "
        f"mark {read_position(spool)}, inflight {read_inflight(spool)}, segments {list_segments(spool)}")
    assert max(stored.values()) == 1, "a span was stored twice"
    assert len(stored) >= len(acked) and len(stored) % SPANS_PER_TRACE == 0
    span_count = {r["trace_id"]: r["span_count"] for r in runs}
    acked_traces = {t for t, _ in acked}
    assert all(span_count.get(t) == SPANS_PER_TRACE for t in acked_traces), "a run misses spans"
