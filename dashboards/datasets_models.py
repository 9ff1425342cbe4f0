"""Answers of the datasets endpoints as the dashboards read them (`POST /api/datasets`)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SkippedRun(BaseModel):
    trace_id: str
    reason: str


class DatasetSaved(BaseModel):
    project: str
    name: str
    cases: int
    skipped: list[SkippedRun] = Field(default_factory=list)
