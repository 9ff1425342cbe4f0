"""The ingest server's settings: one declarative table, each with a documented default.

Sources, highest priority first: explicit arguments (CLI flags), `STEPLENS_*` environment
variables, the `steplens.toml` file (path from `--config` or `STEPLENS_CONFIG`), the defaults
below. The README's configuration table is generated from the field descriptions here, so a
setting documented anywhere else is a bug.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from ingest.alerts.rules import AlertChannelConfig, AlertRule, check_rules
from ingest.evaluators.rules import EvaluatorRule, check_evaluator_rules
from ingest.otlp.limits import AttributeLimits
from ingest.queues.model import DeclaredQueue
from ingest.scores.configs import ScoreConfig, check_file_configs

Scope = Literal["ingest", "read", "admin", "operator", "annotate"]
DUCKDB_VECTOR_SIZE = 2048

MIB = 1024 * 1024


class ApiKey(BaseModel):
    """An API key bound to one project and a set of scopes. Give the key's hash or the key itself
    via an environment variable reference; never commit a key."""

    key: str = Field(description="The secret (prefer `key_env` to keep it out of files).", default="")
    key_env: str | None = Field(default=None, description="Name of an environment variable holding the key.")
    project: str = Field(description="Project every span sent with this key belongs to.")
    scopes: list[Scope] = Field(
        default_factory=lambda: ["ingest", "read"],
        description="ingest (send spans, register approvals), read (query the key's project), annotate (write "
        "scores), admin (also annotate, decide the project's approvals, evaluate its alert rules, declare score "
        "configs), operator (every project and /metrics; give it only to the people who run the server).",
    )


class Settings(BaseSettings):
    """All ingest settings. Environment: `STEPLENS_<FIELD>` (e.g. STEPLENS_PORT=4318)."""

    model_config = SettingsConfigDict(env_prefix="STEPLENS_", extra="ignore", toml_file=None)

    host: str = Field("127.0.0.1", description="Interface to bind. Beyond loopback requires API keys.")
    port: int = Field(4318, description="OTLP/HTTP receiver and query API port.")
    grpc_port: int = Field(4317, description="OTLP/gRPC receiver port; 0 disables gRPC.")
    db: Path = Field(Path("data/steplens.duckdb"), description="DuckDB database file.")
    store: Literal["duckdb", "clickhouse"] = Field(
        "duckdb", description="Storage backend: `duckdb` (one machine, the default) or `clickhouse` (a server or cluster)."
    )
    clickhouse_url: str = Field(
        "chdb://data/steplens.chdb",
        description="ClickHouse to use with store=clickhouse: `http(s)://host:port` (a server, via clickhouse-connect) "
        "or `chdb:///abs/dir` / `chdb://relative/dir` (the embedded engine on a data directory).",
    )
    clickhouse_user: str = Field("default", description="ClickHouse user.")
    clickhouse_password: str = Field(
        "",
        repr=False,
        description="ClickHouse password; set it with the STEPLENS_CLICKHOUSE_PASSWORD environment variable, not a file.",
    )
    clickhouse_database: str = Field("steplens", description="ClickHouse database holding the steplens tables.")
    clickhouse_cluster: str | None = Field(
        None, description="ClickHouse cluster name: tables are then replicated (ON CLUSTER) behind Distributed tables."
    )
    spool_dir: Path | None = Field(None, description="Write-ahead spool directory (default: next to the db, `<db>.spool`).")
    default_project: str = Field("default", description="Project of spans received without API keys configured.")
    api_keys: list[ApiKey] = Field(default_factory=list, description="API keys; none means loopback-only, no auth.")
    max_body_bytes: int = Field(64 * MIB, description="Largest request body after decompression (413 beyond).")
    queue_max_bytes: int = Field(256 * MIB, description="Bytes of accepted-but-unloaded payload before answering 503.")
    max_inflight_bytes: int = Field(
        256 * MIB, description="Bytes of request bodies being read/decoded at once before answering 503."
    )
    body_read_timeout_s: float = Field(
        30.0,
        ge=0,
        description="Most seconds to receive a request body once its headers arrived (408, connection closed, "
        "beyond); 0 disables.",
    )
    max_gzip_members: int = Field(
        1000, ge=1, description="Most gzip members (concatenated streams) in one request body (413 beyond)."
    )
    max_attribute_value_bytes: int = Field(
        1 * MIB,
        ge=1024,
        description="Longest attribute value (string/bytes; also span name, status message) stored; longer ones are "
        "cut to it and marked in `steplens.ingest.truncated` (partial_success says so).",
    )
    max_attributes_per_span: int = Field(
        4096,
        ge=16,
        description="Most attributes kept per span (and per event, link, resource, scope); the rest are dropped, "
        "counted in `dropped_attributes_count` and `steplens.ingest.dropped_attributes`.",
    )
    max_events_per_span: int = Field(
        1024,
        ge=16,
        description="Most events (and, separately, links) kept per span; the rest are dropped, counted in "
        "`dropped_events_count` / `dropped_links_count` and `steplens.ingest.dropped_events`.",
    )
    retry_after_s: int = Field(1, ge=1, le=5, description="Retry-After seconds sent with 429/503 (1..5).")
    commit_interval_ms: int = Field(20, description="Group-commit window: requests arriving within it share one fsync.")
    load_batch_spans: int = Field(50_000, description="Most spans the loader writes to DuckDB in one transaction.")
    upkeep_interval_s: float = Field(
        1.0,
        gt=0,
        description="Under sustained load, most seconds between analytics upkeep passes (tool costs, model usage, "
        "replanning lag spans by about this much; none once the writer is idle).",
    )
    upkeep_max_traces: int = Field(
        50_000, ge=1, description="Most traces one analytics upkeep pass recomputes (bounds one transaction's size)."
    )
    checkpoint_idle_wal_bytes: int = Field(
        32 * MIB, ge=0, description="Writer checkpoints DuckDB when idle and the WAL is this big (0: DuckDB's auto checkpoint)."
    )
    checkpoint_max_wal_bytes: int = Field(
        256 * MIB,
        ge=0,
        description="Writer checkpoints even under load once the WAL reaches this size (it otherwise checkpoints "
        "under load once per duckdb_row_group_size new spans, the cheapest cadence).",
    )
    normalize_processes: int = Field(
        2, ge=0, description="Worker processes normalizing spans (a second core for the GIL-bound part); 0: in threads."
    )
    duckdb_threads: int = Field(
        0,
        ge=0,
        description="DuckDB worker threads of the server; 0: one fewer than the CPUs (at least 1), leaving a core "
        "to the receiver and normalize workers, which also need it under load.",
    )
    duckdb_row_group_size: int = Field(
        16_384,
        ge=DUCKDB_VECTOR_SIZE,
        description="Rows per DuckDB row group (a multiple of 2048) the server writes (DuckDB's default 122880 makes checkpoints "
        "under load spike to seconds; see ingest/store/database.py).",
    )
    duckdb_memory_limit: str = Field(
        "256MB", description="DuckDB memory_limit of the server (buffer pool; spills beyond it); '' for DuckDB's default."
    )
    retention_days: int = Field(
        0, description="Delete spans, runs, log records, scores and evaluator outcomes older than this many days; 0 keeps "
        "everything."
    )
    retention_interval_s: int = Field(3600, description="How often the retention sweep runs.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Server log level; `debug` logs every load, upkeep pass and checkpoint with its duration."
    )
    query_timeout_s: float = Field(10.0, description="Time limit of one query API request's SQL.")
    price_file: Path | None = Field(None, description="TOML file overriding/adding model prices (USD per 1M tokens).")
    alerts: list[AlertRule] = Field(default_factory=list, description="Alert rules (`[[alerts]]`), see docs/alerts.md.")
    alert_channels: list[AlertChannelConfig] = Field(
        default_factory=list, description="Alert channels (`[[alert_channels]]`): webhooks; `log` always exists."
    )
    alerts_defaults: bool = Field(
        True,
        description="With no `[[alerts]]` configured, evaluate the built-in rules (per agent: steps per run release "
        "vs release, steps drift, failure rate and cost per run last 24 h vs the 7 days before, every score release vs "
        "release, the hand-off rate release vs release; to the log). "
        "Any `[[alerts]]` replaces them; false turns them off. See docs/alerts.md.",
    )
    search_index: Path | None = Field(
        None,
        description="Full-text search index file (SQLite FTS5, kept by the server; default: next to the db, "
        "`<db>.search`). Derived from the spans: deleting it makes the server rebuild it.",
    )
    sql_timeout_s: float = Field(
        5.0, gt=0, description="Time limit of one `POST /api/sql` query, streaming its answer included (504 beyond; "
        "never more than query_timeout_s)."
    )
    sql_max_rows: int = Field(
        100_000, ge=1, le=10_000_000, description="Most rows one `POST /api/sql` answer carries (the rest is cut; "
        "JSON says `truncated`)."
    )
    sql_max_result_bytes: int = Field(
        64 * MIB, ge=1024, description="Most bytes of one `POST /api/sql` answer (cut before the batch that would pass it)."
    )
    sql_max_query_bytes: int = Field(
        64 * 1024, ge=256, le=16 * MIB, description="Longest SQL text `POST /api/sql` accepts (400 beyond)."
    )
    sql_max_concurrent: int = Field(
        2, ge=1, le=64, description="Most `POST /api/sql` queries running at once; one more is answered 429 with "
        "Retry-After (the writer and the pages keep their share of the CPU)."
    )
    queues: list[DeclaredQueue] = Field(
        default_factory=list,
        description="Annotation queues (`[[queues]]`: name, project, filter, sampling_rate, score_configs, "
        "assignees, labels_per_item, lease_s), kept as the file says at startup; see README \"Annotation queues\".",
    )
    queue_fill_interval_s: float = Field(
        2.0, gt=0, le=3600,
        description="Seconds between the passes that add arriving runs to annotation queues (a run enters about "
        "this long after its outcome is stored).",
    )

    scores: list[ScoreConfig] = Field(
        default_factory=list,
        description="Score configs (`[[scores]]`: name, data_type, min/max, categories, description, optional "
        "project); a score breaking its config is refused with 422. See the README's Scores section.",
    )
    scores_strict: bool = Field(
        False, description="Refuse (422) a score whose name has no config; by default it is stored with its type inferred."
    )
    export_page_rows: int = Field(
        5000, ge=1, le=1_000_000, description="Rows `GET /api/export` reads per page (each page one short read under "
        "query_timeout_s; an export of any size is many pages)."
    )
    evaluators: list[EvaluatorRule] = Field(
        default_factory=list,
        description="Online evaluator rules (`[[evaluators]]`: which runs, a built-in evaluator or an LLM judge, the "
        "score it writes). See the README's Online evaluators section.",
    )
    evaluator_concurrency: int = Field(
        4, ge=1, le=64, description="Evaluations (judge calls included) the server runs at once, on its own threads "
        "(mostly waiting: on the store's commits, on a judge's answer)."
    )
    evaluator_poll_interval_s: float = Field(
        5.0, gt=0, description="How often the evaluator thread looks for runs its rules have not scored yet."
    )
    role: Literal["all", "ingest", "api", "worker"] = Field(
        "all",
        description="What this process runs (`steplens serve --role`): `all` everything (the only role DuckDB "
        "allows); `ingest` the OTLP receivers, spool and writer; `api` the query API; `worker` the singleton jobs "
        "(alerts, evaluators, queue fill, retention), exactly one per deployment. See docs/deploy.md.",
    )

    @model_validator(mode="after")
    def _evaluator_rules(self) -> Settings:
        check_evaluator_rules(self.evaluators)
        return self

    @model_validator(mode="after")
    def _score_configs(self) -> Settings:
        check_file_configs(self.scores)
        return self

    @model_validator(mode="after")
    def _row_group_size(self) -> Settings:
        if self.duckdb_row_group_size % DUCKDB_VECTOR_SIZE:
            raise ValueError(
                f"duckdb_row_group_size must be a multiple of {DUCKDB_VECTOR_SIZE} (DuckDB's vector size), "
                f"got {self.duckdb_row_group_size}"
            )
        return self

    @model_validator(mode="after")
    def _alert_rules(self) -> Settings:
        check_rules(self.alerts, self.alert_channels)
        return self

    @model_validator(mode="after")
    def _distinct_queues(self) -> Settings:
        seen = [(q.project, q.name) for q in self.queues]
        twice = sorted({f"{p}/{n}" for p, n in seen if seen.count((p, n)) > 1})
        if twice:
            raise ValueError(f"[[queues]] declared more than once: {', '.join(twice)}")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_path = init_settings.init_kwargs.pop("_config_file", None)  # type: ignore[attr-defined]
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml_path:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_path))
        return tuple(sources)

    @property
    def duckdb_config(self) -> dict[str, str | int]:
        """The DuckDB connection config of the server (given as config, never spliced into SQL)."""
        config: dict[str, str | int] = {"threads": self.duckdb_threads or max(1, (os.cpu_count() or 2) - 1)}
        if self.duckdb_memory_limit:
            # caps DuckDB's buffer pool (it spills to disk beyond it) so RSS stays bounded as data grows
            config["memory_limit"] = self.duckdb_memory_limit
        return config

    @property
    def attribute_limits(self) -> AttributeLimits:
        """The limits the receivers cut spans to (ingest/otlp/limits.py)."""
        return AttributeLimits(self.max_attribute_value_bytes, self.max_attributes_per_span, self.max_events_per_span)

    @property
    def spool_path(self) -> Path:
        return self.spool_dir or self.db.with_name(self.db.name + ".spool")

    @property
    def search_index_path(self) -> Path:
        return self.search_index or self.db.with_name(self.db.name + ".search")


def load_settings(config: Path | None = None, **overrides: object) -> Settings:
    """Build settings from a TOML file (optional), the environment, and explicit overrides.

    `None` overrides are dropped so that an unset CLI flag does not mask the environment.
    """
    import os

    kwargs = {k: v for k, v in overrides.items() if v is not None}
    path = config or (Path(os.environ["STEPLENS_CONFIG"]) if os.environ.get("STEPLENS_CONFIG") else None)
    if path is not None:
        if not Path(path).is_file():
            raise FileNotFoundError(f"config file {path} not found: pass an existing steplens.toml to --config")
        kwargs["_config_file"] = Path(path)
    return Settings(**kwargs)  # type: ignore[arg-type]
