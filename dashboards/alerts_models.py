"""Typed views of `GET /api/regressions`, `GET /api/alerts` and `GET /api/alerts/events` as the
Regressions and Alerts pages read them.

Like dashboards/models.py: every field has a default and unknown fields are ignored, so a server
that adds a field never breaks a page and one that lacks a field shows it as empty.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FindingSide(_Model):
    label: str = ""
    n: int = 0
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    examples: list[str] = Field(default_factory=list)


class Finding(_Model):
    metric: str = ""
    agent: str | None = None
    comparison: str = ""
    release: str | None = None  # cohort comparisons: the gray release
    baseline: FindingSide = Field(default_factory=FindingSide)
    current: FindingSide = Field(default_factory=FindingSide)
    relative_change: float | None = None
    effect_size: float | None = None
    test: str | None = None
    p_value: float | None = None
    q_value: float | None = None
    verdict: str = ""
    flagged: bool = False
    reason: str = ""


class DriftPoint(_Model):
    start: datetime | None = None
    runs: int = 0
    mean: float | None = None
    z: float | None = None
    cusum_up: float = 0.0
    cusum_down: float = 0.0
    alarm: bool = False


class DriftResult(_Model):
    agent: str | None = None
    metric: str = "steps"
    verdict: str = ""
    flagged: bool = False
    reference_mean: float | None = None
    reference_sd: float | None = None
    reference_runs: int = 0
    current_mean: float | None = None
    relative_change: float | None = None
    first_alarm: datetime | None = None
    reason: str = ""
    points: list[DriftPoint] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)


class Regressions(_Model):
    comparison: str = ""
    generated_at: datetime | None = None
    flagged: int = 0
    findings: list[Finding] = Field(default_factory=list)
    drift: list[DriftResult] = Field(default_factory=list)


class AlertStateView(_Model):
    subject: str = ""
    status: str = ""
    since: datetime | None = None
    last_notified: datetime | None = None
    last_evaluated: datetime | None = None
    value: float | None = None
    summary: str | None = None


class AlertRuleView(_Model):
    rule: dict[str, Any] = Field(default_factory=dict)
    builtin: bool = False
    firing: bool = False
    states: list[AlertStateView] = Field(default_factory=list)
    last_evaluated: datetime | None = None
    next_due: datetime | None = None
    last_error: str | None = None


class Alerts(_Model):
    rules: list[AlertRuleView] = Field(default_factory=list)
    channels: list[dict[str, str]] = Field(default_factory=list)


class AlertEventView(_Model):
    event_id: str = ""
    time: datetime | None = None
    rule: str = ""
    subject: str = ""
    kind: str = ""
    severity: str = ""
    summary: str = ""
    value: float | None = None
    evidence: list[str] = Field(default_factory=list)
    channels: list[str] = Field(default_factory=list)


class AlertEvents(_Model):
    events: list[AlertEventView] = Field(default_factory=list)
