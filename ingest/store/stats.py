"""A typed snapshot of the store's state, for /readyz, tests and the CLI."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoreStats:
    queue_bytes: int  # accepted (or being fsynced) but not yet loaded into DuckDB
    queue_max_bytes: int
    requests_submitted: int
    requests_acked: int  # made durable in the spool
    fsyncs: int  # spool fsyncs; fewer than requests_acked when group commit shares them
    pending_records: int  # durable records waiting for the loader
    spans_stored: int
    spans_deduplicated: int
    records_loaded: int
    records_dead_lettered: int
    spans_dead_lettered: int
    spans_expired: int
    runs_expired: int
    replayed_records: int  # records replayed from the spool at the last start
    last_commit_latency_s: float
    last_load_latency_s: float
    checkpoints: int = 0  # CHECKPOINTs the writer ran itself (DuckDB's automatic one is off)
    upkeep_passes: int = 0  # analytics upkeep passes (ingest/store/upkeep.py)
    last_upkeep_latency_s: float = 0.0
    upkeep_traces_set_aside: int = 0  # traces whose analytics upkeep fails on their own, retried with backoff
    writer_error: str | None = None  # set when DuckDB failed fatally and loading stopped
    logs_stored: int = 0  # OTLP log records committed to DuckDB (log_records)
    logs_deduplicated: int = 0  # log records of retried exports, already stored
    unwritable: str | None = None  # why the spool or the database cannot be written now (503s meanwhile)
