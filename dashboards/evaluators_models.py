"""Typed view of `GET /api/evaluators` as the Evaluators page reads it.

Like dashboards/models.py: every field has a default and unknown fields are ignored, so a server
that adds a field never breaks the page and one that lacks a field shows it as empty.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class EvaluationOutcome(_Model):
    project: str = ""
    trace_id: str = ""
    status: str = ""
    value: bool | float | str | None = None
    passed: bool | None = None
    reason: str | None = None
    attempts: int = 0
    cost_usd: float | None = None
    judge_trace_ids: list[str] = Field(default_factory=list)
    evaluated_at: datetime | None = None


class EvaluatorSummary(_Model):
    evaluated: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    cost_usd: float = 0.0
    last_evaluated: datetime | None = None


class Evaluator(_Model):
    rule: dict[str, Any] = Field(default_factory=dict)
    judge_eval_run_id: str | None = None
    summary: EvaluatorSummary = Field(default_factory=EvaluatorSummary)
    recent: list[EvaluationOutcome] = Field(default_factory=list)
    last_pass: datetime | None = None
    last_error: str | None = None


class Evaluators(_Model):
    since: datetime | None = None
    evaluators: list[Evaluator] = Field(default_factory=list)
