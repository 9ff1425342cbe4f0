"""The server's self-metrics, exposed in Prometheus format at `/metrics`.

One registry per server instance (not the global default), so tests can run several servers in
one process without metrics bleeding between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


@dataclass
class IngestMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.spans_received = Counter("steplens_spans_received", "Spans received in export requests.", registry=r)
        self.spans_stored = Counter("steplens_spans_stored", "Spans committed to DuckDB.", registry=r)
        self.spans_rejected = Counter(
            "steplens_spans_rejected", "Spans rejected, by reason.", ["reason"], registry=r
        )
        self.spans_deduplicated = Counter(
            "steplens_spans_deduplicated", "Spans dropped as duplicates of stored ones.", registry=r
        )
        self.requests = Counter(
            "steplens_export_requests", "Export requests by transport and status code.", ["transport", "code"], registry=r
        )
        self.queue_bytes = Gauge("steplens_queue_bytes", "Accepted payload bytes not yet loaded into DuckDB.", registry=r)
        self.commit_seconds = Histogram(
            "steplens_commit_seconds",
            "Latency of one durable commit (spool fsync or DuckDB commit).",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            registry=r,
        )
        self.spool_fsyncs = Counter(
            "steplens_spool_fsyncs", "fsyncs of the write-ahead spool (one per commit group).", registry=r
        )
        self.spool_requests = Counter(
            "steplens_spool_requests", "Requests made durable in the spool (shared fsyncs).", registry=r
        )
        self.spans_expired = Counter(
            "steplens_spans_expired", "Spans deleted by retention (older than retention_days).", registry=r
        )
        self.load_seconds = Histogram(
            "steplens_load_seconds", "Latency of one DuckDB load transaction.", registry=r
        )
        self.upkeep_seconds = Histogram(
            "steplens_upkeep_seconds",
            "Latency of one analytics upkeep pass (tool costs, model usage, replanning rows).",
            registry=r,
        )
        self.upkeep_traces = Counter(
            "steplens_upkeep_traces", "Traces whose analytics rows an upkeep pass recomputed.", registry=r
        )
        self.records_dead_lettered = Counter(
            "steplens_records_dead_lettered",
            "Acknowledged records set aside in <spool>/dead/ because they fail on their own, by the error's class "
            "(see `steplens spool list`).",
            ["reason"],
            registry=r,
        )
        self.storage_unwritable = Gauge(
            "steplens_storage_unwritable",
            "1 while the spool or the database cannot be written (exports get 503 and /readyz is not ready).",
            ["part"],
            registry=r,
        )
        self.upkeep_traces_isolated = Counter(
            "steplens_upkeep_traces_isolated",
            "Traces whose analytics upkeep failed on their own data and were set aside (retried alone with "
            "backoff), by the error's class.",
            ["reason"],
            registry=r,
        )
        self.upkeep_traces_set_aside = Gauge(
            "steplens_upkeep_traces_set_aside", "Traces whose analytics upkeep is set aside right now.", registry=r
        )
        self.checkpoint_seconds = Histogram(
            "steplens_checkpoint_seconds", "Latency of one DuckDB checkpoint run by the writer.", registry=r
        )
        # OTLP logs (POST /v1/logs, LogsService/Export): the same meanings as the span counters.
        self.logs_received = Counter("steplens_logs_received", "Log records received in export requests.", registry=r)
        self.logs_stored = Counter("steplens_logs_stored", "Log records committed to DuckDB.", registry=r)
        self.logs_rejected = Counter(
            "steplens_logs_rejected", "Log records rejected, by reason.", ["reason"], registry=r
        )
        self.logs_deduplicated = Counter(
            "steplens_logs_deduplicated", "Log records dropped as duplicates of stored ones.", registry=r
        )
        self.scores_written = Counter(
            "steplens_scores_written", "Scores committed to DuckDB (new, or replacing an older one of the same id).",
            registry=r,
        )
        self.scores_rejected = Counter(
            "steplens_scores_rejected", "Scores refused or set aside after the ack, by reason.", ["reason"], registry=r
        )
        # Input limits (design.md §3 "Input limits"): what was changed at the door or while normalizing.
        self.values_out_of_range = Counter(
            "steplens_values_out_of_range",
            "Numeric span values stored as NULL for being out of range (token counts, costs), by kind.",
            ["kind"],
            registry=r,
        )
        self.values_truncated = Counter(
            "steplens_values_truncated",
            "Attribute values (and span names, status messages) cut to max_attribute_value_bytes at the door.",
            registry=r,
        )
        self.attributes_dropped = Counter(
            "steplens_attributes_dropped", "Attributes dropped at the door over max_attributes_per_span.", registry=r
        )
        self.body_read_timeouts = Counter(
            "steplens_body_read_timeouts", "Requests answered 408: the body did not arrive within body_read_timeout_s.",
            registry=r,
        )
        self.events_dropped = Counter(
            "steplens_events_dropped", "Span events and links dropped at the door over max_events_per_span.", registry=r
        )
        self.spans_repaired = Counter(
            "steplens_spans_repaired",
            "Spans stored after a repair reported in partial_success (e.g. an all-zero parent id made a root), by reason.",
            ["reason"],
            registry=r,
        )
