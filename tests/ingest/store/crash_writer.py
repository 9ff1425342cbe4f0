"""Run as a subprocess by the kill -9 test: a store under concurrent load, printing each
acknowledged request's trace ids (`ACK tid ...`) the moment `submit_blocking` returns.

Ids are deterministic per (seed, request number), and each run first re-sends requests of the
previous seed, so retries across a crash are exercised as well as plain durability.

With a third argument `logs`, each request's spans are preceded by a logs export holding one log
record per span (keyed to it): the ACK then means both were acknowledged. With `scores`, each
request's spans are followed by one score per trace through `submit_scores_blocking` (the server's
one write path for scores): the ACK then means the spans and the scores were acknowledged.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from pathlib import Path

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from ingest.config import Settings
from ingest.scores.model import ScoreIn
from ingest.scores.submit import submit_scores_blocking
from ingest.store.backend import open_store
from tests.ingest.store.otlp_build import agent_run, request
from tracer import conventions as c

TRACES_PER_REQUEST = 3


def _hex(*parts: object, n: int) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:n]


def build(seed: int, number: int):
    spans = []
    tids = []
    for t in range(TRACES_PER_REQUEST):
        tid = _hex(seed, number, t, n=32)
        root, kids = agent_run(trace_id=tid, steps=2)
        new_ids = {s.span_id: _hex(tid, i, n=16) for i, s in enumerate([root, *kids])}
        for s in [root, *kids]:
            s.span_id = new_ids[s.span_id]
            s.parent = new_ids.get(s.parent) if s.parent else None
        spans += [root, *kids]
        tids.append(tid)
    return tids, request(spans)


def logs_for(spans: ExportTraceServiceRequest) -> ExportLogsServiceRequest:
    """One user-message event per span of `spans`, keyed to it, stamped with the span's start."""
    logs = ExportLogsServiceRequest()
    scope_logs = logs.resource_logs.add().scope_logs.add()
    for rs in spans.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                record = scope_logs.log_records.add(
                    trace_id=span.trace_id, span_id=span.span_id, event_name=c.GEN_AI_EVENT_USER_MESSAGE,
                    time_unix_nano=span.start_time_unix_nano, observed_time_unix_nano=span.end_time_unix_nano,
                )
                record.body.CopyFrom(AnyValue(string_value=span.span_id.hex()))
    return logs


def score_for(trace_id: str) -> ScoreIn:
    """The score the kill -9 test expects for `trace_id`: its value is read back from the id."""
    return ScoreIn(name="quality", value=int(trace_id[:4], 16) / 65535, trace_id=trace_id, source="rule")


def main() -> None:
    db, seed = Path(sys.argv[1]), int(sys.argv[2])
    with_logs = sys.argv[3:] == ["logs"]
    with_scores = sys.argv[3:] == ["scores"]
    # the store: STEPLENS_STORE / STEPLENS_CLICKHOUSE_URL in the environment (DuckDB unless a test says)
    store = open_store(Settings(db=db, commit_interval_ms=2, load_batch_spans=3000))
    store.start()
    print("READY", flush=True)
    lock = threading.Lock()
    counter = iter(range(10**9))

    def client() -> None:
        while True:
            with lock:
                n = next(counter)
            # every 4th request re-sends one from the previous run (or this one): a retry
            src_seed, src_n = (seed - 1, n // 4) if n % 4 == 0 and seed > 0 else (seed, n)
            tids, req = build(src_seed, src_n)
            if with_logs:  # the log records arrive before their spans
                store.submit_logs_blocking("p", logs_for(req), timeout=30)
            store.submit_blocking("p", req, timeout=30)
            if with_scores:
                submit_scores_blocking(store, "p", [score_for(tid) for tid in tids], timeout=30)
            with lock:
                sys.stdout.write("ACK " + " ".join(tids) + "\n")
                sys.stdout.flush()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
