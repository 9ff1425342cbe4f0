"""Where the ingest loader's time goes, stage by stage, in one process (no HTTP, no threads).

    .venv/bin/python -m bench._ingest_profile [--requests 100] [--batch-spans 50000] [--cprofile]

Stages per span, on the same payloads as bench/ingest_bench.py: protobuf parse, re-serialization
(what `SpanStore.submit` does on the event loop), normalization to the Arrow table (`spans_table`),
`load_batch` into a fresh DuckDB (spans insert, runs merge, upkeep queue) in `--batch-spans`
transactions, the analytics upkeep passes, the checkpoint, then the search indexer's steps for all of
it (every stage after normalization is the writer thread's). Figures are process CPU time (DuckDB's
threads included), which other work on a shared machine inflates less than wall-clock time; run it
before and after a change, on the same load.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from bench._ingest_payloads import PayloadFactory  # noqa: E402
from ingest.config import Settings  # noqa: E402
from ingest.normalize import spans_table  # noqa: E402
from ingest.search.index import SearchIndex  # noqa: E402
from ingest.search.indexer import SearchIndexer  # noqa: E402
from ingest.store import upkeep  # noqa: E402
from ingest.store.database import open_database  # noqa: E402
from ingest.store.loading import ensure_position_row, load_batch  # noqa: E402
from ingest.store.migrate import migrate  # noqa: E402
from ingest.store.spool import Position  # noqa: E402
from tracer.pricing import PriceTable  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--spans-per-request", type=int, default=300)
    parser.add_argument("--batch-spans", type=int, default=50_000)
    parser.add_argument("--cprofile", action="store_true", help="print the top functions of normalize + load")
    args = parser.parse_args(argv)

    factory = PayloadFactory(args.spans_per_request)
    bodies = [factory.next() for _ in range(args.requests)]
    spans = sum(n for _, n, _ in bodies)
    prices = PriceTable.load(None)
    now = datetime.now(UTC).replace(tzinfo=None)

    def per_span(label: str, seconds: float) -> None:
        print(f"  {label:<34} {seconds / spans * 1e6:8.2f} us/span  {spans / seconds:>12,.0f} spans/s")

    t = time.process_time()
    requests = [ExportTraceServiceRequest.FromString(b) for b, _, _ in bodies]
    per_span("parse (FromString)", time.process_time() - t)
    t = time.process_time()
    for r in requests:
        r.SerializeToString()
    per_span("re-serialize (SerializeToString)", time.process_time() - t)

    profiler = cProfile.Profile() if args.cprofile else None
    if profiler:
        profiler.enable()
    t = time.process_time()
    tables = [spans_table("bench", r, now, prices=prices) for r in requests]
    per_span("normalize (spans_table)", time.process_time() - t)

    with tempfile.TemporaryDirectory() as tmp:
        conn = open_database(Path(tmp) / "p.duckdb")
        migrate(conn)
        conn.execute("SET checkpoint_threshold = '1TB'")  # as the writer sets it: it checkpoints itself
        ensure_position_row(conn, now)
        indexer = SearchIndexer(SearchIndex(Path(tmp) / "p.duckdb.search"))
        indexer.step(conn)  # creates the empty index before any span is stored (else: a rebuild)
        t = time.process_time()
        batch: list[pa.Table] = []
        rows = 0
        loads = 0
        for i, table in enumerate(tables):
            batch.append(table)
            rows += table.num_rows
            if rows >= args.batch_spans or i == len(tables) - 1:
                load_batch(conn, pa.concat_tables(batch, promote_options="permissive"), Position(1, i), now)
                batch, rows, loads = [], 0, loads + 1
        per_span(f"load_batch ({loads} transactions)", time.process_time() - t)
        t = time.process_time()
        passes = 0
        while True:  # what the writer's upkeep passes do for these spans, here in one go
            passes += 1
            if not upkeep.run_pass(conn, Settings().upkeep_max_traces).remaining:
                break
        per_span(f"analytics upkeep ({passes} passes)", time.process_time() - t)
        t = time.process_time()
        conn.execute("CHECKPOINT")
        per_span("checkpoint", time.process_time() - t)
        t = time.process_time()
        steps = 0
        indexer.note_loaded()  # what the writer does after a load
        while indexer.work:
            indexer.step(conn)
            steps += 1
        per_span(f"search indexing ({steps} steps)", time.process_time() - t)
        indexer.index.close()
        conn.close()
    if profiler:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
