"""Cost of the loader's dedup probe (ingest/store/loading.py) on a store that already holds spans.

    .venv/bin/python -m bench.dedup_bench [--stored 1000000] [--hours 6] [--batch-spans 5000] [--reps 15]

What runs: a real DuckDB file opened as the server opens it (database.open_database, migrations),
filled with `--stored` spans of 12-span traces spread over `--hours` hours plus their runs rows
(synthesized in SQL from one normalized template span, so filling is fast). Then `load_batch` (the
writer's one load transaction: dedup probe, spans insert, runs merge, upkeep queue) is timed on:

1. fresh: batches of new traces starting now (the steady-state case);
2. continued: the same plus one new span of a trace that started `--hours`/2 ago (a long run
   exporting in pieces, so the probe must reach back to that trace's extent);
3. resent +1h: a stored batch of traces sent again with every start time moved by an hour (all
   duplicates; the probe must find them though the times differ).

It prints the median and max load time per case and how many spans each batch inserted (the
resend must insert 0). Run it from an older tree to compare before/after.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from bench._ingest_payloads import agent_run, encode_spans  # noqa: E402
from ingest.config import Settings  # noqa: E402
from ingest.normalize import spans_table  # noqa: E402
from ingest.store.database import open_database  # noqa: E402
from ingest.store.loading import ensure_position_row, load_batch  # noqa: E402
from ingest.store.migrate import migrate  # noqa: E402
from ingest.store.spool import Position  # noqa: E402

NOW = datetime(2026, 12, 1, 12, 0, 0)
EPOCH = datetime(1970, 1, 1)


def _ns(t: datetime) -> int:
    return (t - EPOCH) // timedelta(microseconds=1) * 1000


def _batch(rng: random.Random, start: datetime, spans: int, shift: timedelta = timedelta(0)):
    """A normalized table of whole agent runs starting at `start` (and the same spans moved by `shift`)."""
    out = []
    while sum(len(x) for x in out) < spans:
        out.append(agent_run(rng, rng.randbytes(16), _ns(start)))
    body = encode_spans([s for run in out for s in run])
    request = ExportTraceServiceRequest.FromString(body)
    moved = ExportTraceServiceRequest.FromString(body)
    for rs in moved.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                s.start_time_unix_nano += shift // timedelta(microseconds=1) * 1000
                s.end_time_unix_nano += shift // timedelta(microseconds=1) * 1000
    at = datetime.now(UTC).replace(tzinfo=None)
    return spans_table("bench", request, at), spans_table("bench", moved, at)


def _fill(conn, stored: int, hours: float, template) -> None:
    """`stored` spans in traces of 12, start times spread evenly over `hours` before NOW, and runs."""
    conn.register("template", template.slice(0, 1))
    span_us = int(hours * 3600e6 / max(1, stored))
    conn.execute(
        """
        INSERT INTO spans BY NAME
        SELECT template.* REPLACE (
            md5('t' || (i // 12)::VARCHAR) AS trace_id,
            substr(md5('s' || i::VARCHAR), 1, 16) AS span_id,
            $t0 + to_microseconds(i * $step) AS start_time,
            $t0 + to_microseconds(i * $step + 1000) AS end_time)
        FROM template, (SELECT range AS i FROM range($n))
        """,
        {"t0": NOW - timedelta(hours=hours), "step": span_us, "n": stored},
    )
    conn.unregister("template")
    conn.execute(
        """
        INSERT INTO runs BY NAME
        SELECT project, trace_id, min(start_time) AS span_start, max(end_time) AS span_end,
            min(start_time) AS start_time, max(end_time) AS end_time, count(*)::INTEGER AS span_count,
            0 AS llm_calls, 0 AS tool_calls, 0 AS tool_errors, 0 AS error_spans, 0 AS input_tokens,
            0 AS output_tokens, $now AS updated_at
        FROM spans GROUP BY project, trace_id
        """,
        {"now": NOW},
    )
    conn.execute("CHECKPOINT")


def _time(conn, table, reps_label: str, results: dict[str, list[tuple[float, int]]], pos: list[int]) -> None:
    pos[0] += 1
    t = time.perf_counter()
    result = load_batch(conn, table, Position(1, pos[0]), datetime.now(UTC).replace(tzinfo=None))
    results.setdefault(reps_label, []).append((time.perf_counter() - t, result.inserted))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stored", type=int, default=1_000_000)
    ap.add_argument("--hours", type=float, default=6.0)
    ap.add_argument("--batch-spans", type=int, default=5000)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="steplens-dedup-bench-") as tmp:
        settings = Settings(db=Path(tmp) / "bench.duckdb")
        conn = open_database(settings.db, settings)
        migrate(conn)
        ensure_position_row(conn, NOW)
        template, _ = _batch(rng, NOW, 1)
        t = time.perf_counter()
        _fill(conn, args.stored, args.hours, template)
        print(f"filled {args.stored:,} spans over {args.hours} h in {time.perf_counter() - t:.1f} s", flush=True)
        results: dict[str, list[tuple[float, int]]] = {}
        pos = [0]
        old_trace = conn.execute(
            "SELECT trace_id FROM runs WHERE span_start >= $t ORDER BY span_start LIMIT 1",
            {"t": NOW - timedelta(hours=args.hours / 2)},
        ).fetchall()[0][0]
        for k in range(args.reps):
            start = NOW + timedelta(seconds=k)
            fresh, _ = _batch(rng, start, args.batch_spans)
            _time(conn, fresh, "fresh", results, pos)
            cont, _ = _batch(rng, start, args.batch_spans)
            row = cont.slice(0, 1).to_pylist()[0]
            row.update(trace_id=old_trace, span_id=rng.randbytes(8).hex(), parent_span_id=None)
            cont = pa.concat_tables([cont, pa.Table.from_pylist([row], schema=cont.schema)])
            _time(conn, cont, "continued", results, pos)
            first, moved = _batch(rng, start, args.batch_spans, shift=timedelta(hours=1))
            load_batch(conn, first, Position(1, pos[0]), datetime.now(UTC).replace(tzinfo=None))
            _time(conn, moved, "resent +1h", results, pos)
        conn.close()
    print(f"load_batch of {args.batch_spans:,}-span batches into {args.stored:,} stored spans, {args.reps} reps:")
    for label, runs in results.items():
        times = [r[0] * 1000 for r in runs]
        inserted = sorted({r[1] for r in runs})
        print(
            f"  {label:<11} median {statistics.median(times):7.1f} ms  max {max(times):7.1f} ms  "
            f"inserted per batch {inserted}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
