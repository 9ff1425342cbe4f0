"""Typed view of `/api/queues` as the Queues page reads it.

Like dashboards/models.py: every field has a default and unknown fields are ignored, so a server
that adds a field never breaks the page and one that lacks a field shows it as empty.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Progress(_Model):
    total: int = 0
    pending: int = 0
    in_progress: int = 0
    done: int = 0
    skipped: int = 0


class ScoreConfig(_Model):
    name: str = ""
    data_type: str = "numeric"  # numeric | boolean | categorical
    min: float | None = None
    max: float | None = None
    categories: list[str] | None = None
    description: str | None = None


class Queue(_Model):
    name: str = ""
    project: str = ""
    description: str | None = None
    filter: dict[str, Any] = Field(default_factory=dict)
    sampling_rate: float = 1.0
    score_configs: list[str] = Field(default_factory=list)
    assignees: list[str] = Field(default_factory=list)
    labels_per_item: int = 1
    lease_s: int = 0
    declared: bool = False
    progress: Progress = Field(default_factory=Progress)
    configs: list[ScoreConfig] = Field(default_factory=list)
    last_error: str | None = None


class Queues(_Model):
    queues: list[Queue] = Field(default_factory=list)


class Decision(_Model):
    user: str = ""
    decision: str = ""
    values: dict[str, Any] = Field(default_factory=dict)
    comment: str | None = None
    decided_at: datetime | None = None


class Item(_Model):
    trace_id: str = ""
    run_start: datetime | None = None
    added_at: datetime | None = None
    source: str = ""
    status: str = ""
    held_by: list[str] = Field(default_factory=list)
    decisions: list[Decision] = Field(default_factory=list)


class Items(_Model):
    items: list[Item] = Field(default_factory=list)
    next: str | None = None


class Next(_Model):
    item: Item | None = None
    lease_until: datetime | None = None
    progress: Progress = Field(default_factory=Progress)


class Pair(_Model):
    raters: list[str] = Field(default_factory=list)
    runs: int = 0
    agreement: float = 0.0
    kappa: float | None = None


class ConfigResult(_Model):
    name: str = ""
    runs_with_several_labels: int = 0
    pairs: int = 0
    percent_agreement: float | None = None
    raters: list[Pair] = Field(default_factory=list)


class Results(_Model):
    queue: str = ""
    progress: Progress = Field(default_factory=Progress)
    labels: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    labelled_by: dict[str, int] = Field(default_factory=dict)
    skipped_by: dict[str, int] = Field(default_factory=dict)
    agreement: list[ConfigResult] = Field(default_factory=list)
