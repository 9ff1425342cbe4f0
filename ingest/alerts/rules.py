"""Alert rules and channels as they appear in steplens.toml (`[[alerts]]`, `[[alert_channels]]`).

Why rules are validated here, at load time: a rule that names an unknown metric or lacks its
threshold must stop the server with a clear message, not be skipped silently at 3 a.m.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ingest.analytics.drift import DriftConfig
from ingest.analytics.durations import Duration
from ingest.analytics.findings import DEFAULT_ALPHA
from ingest.analytics.metrics import drift_metric, is_every_score, metric_by_key
from tracer.conventions import RunMode

LOG_CHANNEL = "log"


class RuleKind(StrEnum):
    THRESHOLD = "threshold"  # the window's mean (or rate) above `threshold` (below, for a score)
    WINDOW = "window"  # last `window` vs the `baseline` period before it (significant and large)
    RELEASE = "release"  # newest agent version vs the previous one (or the named ones)
    DRIFT = "drift"  # CUSUM on mean steps per run (or a score) over `lookback`


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


class AlertChannelConfig(BaseModel):
    """Where notifications go. A channel named `log` (the server log) always exists."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    kind: Literal["log", "webhook"] = "webhook"
    url: str = Field("", description="Webhook URL. Prefer `url_env`: a Slack webhook URL is a secret.")
    url_env: str | None = Field(None, description="Environment variable holding the webhook URL.")
    timeout_s: float = Field(5.0, gt=0, description="Timeout of one delivery attempt.")
    max_attempts: int = Field(4, ge=1, le=20, description="Attempts before a delivery is given up (and logged).")
    backoff_s: float = Field(1.0, ge=0, description="First retry delay; doubles per attempt, at most 30 s.")
    evidence_url: str | None = Field(
        None, description="Link template for evidence traces, e.g. 'http://dash:8501/trace?id={trace_id}'."
    )


class AlertRule(BaseModel):
    """One alert rule. Each agent matching `agent` (every agent when unset) is alerted on separately."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    metric: str = Field("steps", description="steps, input_tokens, output_tokens, cost_usd, duration_ms, "
                        "tool_errors, failure_rate, handoff_rate, stop_reason:<reason>, score:<name>, score:<name>=<label> or "
                        "score:* (every score; window and release rules).")
    kind: RuleKind = RuleKind.WINDOW
    agent: str | None = Field(None, description="Only this agent; unset = every agent, each on its own.")
    project: str | None = Field(None, description="Only this project; unset = every project.")
    environment: str | None = None
    modes: list[RunMode] = Field(
        default_factory=lambda: [RunMode.LIVE], min_length=1,
        description="Run modes the rule judges (live also covers runs that name no mode); eval and shadow runs "
        "are left out unless listed.",
    )
    threshold: float | None = Field(
        None, description="threshold rules: fire when the window's value exceeds it (falls below it, for a numeric "
        "or boolean score, where higher is better).",
    )
    window: Duration = Field(timedelta(hours=24), description="Current window (threshold, window rules).")
    baseline: Duration = Field(timedelta(days=7), description="Baseline period before the window (window rules).")
    baseline_version: str | None = Field(None, description="release rules: default the version before current.")
    current_version: str | None = Field(None, description="release rules: default the newest version.")
    lookback: Duration = Field(timedelta(days=28), description="drift rules: range the CUSUM runs over.")
    drift: DriftConfig = Field(default_factory=DriftConfig)
    min_relative_change: float = Field(0.10, ge=0)
    alpha: float = Field(DEFAULT_ALPHA, gt=0, lt=1)
    min_samples: int = Field(30, ge=2)
    interval: Duration = Field(timedelta(minutes=5), description="How often the server evaluates the rule.")
    cooldown: Duration = Field(timedelta(hours=1), description="Least time between notifications while firing.")
    severity: Severity = Severity.WARNING
    channels: list[str] = Field(default_factory=lambda: [LOG_CHANNEL])

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        metric_by_key(v)
        return v

    @model_validator(mode="after")
    def _kind_needs(self) -> AlertRule:
        if self.kind is RuleKind.THRESHOLD and self.threshold is None:
            raise ValueError(f"alert rule {self.name!r}: kind 'threshold' needs `threshold`")
        if self.kind is RuleKind.DRIFT:
            try:
                drift_metric(self.metric)
            except ValueError as exc:
                raise ValueError(f"alert rule {self.name!r}: {exc}") from exc
        if self.kind is RuleKind.THRESHOLD and is_every_score(metric_by_key(self.metric)):
            raise ValueError(f"alert rule {self.name!r}: a threshold applies to one metric, not score:*")
        return self


def check_rules(rules: list[AlertRule], channels: list[AlertChannelConfig]) -> None:
    """Names unique, and every channel a rule names exists; ValueError saying which otherwise."""
    names = [r.name for r in rules]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"alert rule names must be unique; repeated: {', '.join(dupes)}")
    known = {LOG_CHANNEL, *(c.name for c in channels)}
    for rule in rules:
        missing = [c for c in rule.channels if c not in known]
        if missing:
            raise ValueError(
                f"alert rule {rule.name!r} names unknown channel(s) {', '.join(missing)}; "
                f"define them under [[alert_channels]] (known: {', '.join(sorted(known))})"
            )
