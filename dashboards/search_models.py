"""Answers of `GET /api/search` as the dashboards read them (unknown fields ignored, as in models.py)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Segment(_Model):
    text: str
    match: bool = False


class SearchResult(_Model):
    project: str | None = None
    trace_id: str
    span_id: str
    name: str = ""
    operation: str | None = None
    agent_name: str | None = None
    tool_name: str | None = None
    status: str | None = None
    start_time: datetime | None = None
    field: str = ""
    score: float = 0.0
    snippet: list[Segment] = Field(default_factory=list)


class IndexStatus(_Model):
    pending_spans: int = 0
    lag_s: float = 0.0
    rebuilding: bool = False
    rebuilt_through: datetime | None = None
    error: str | None = None


class SearchAnswer(_Model):
    results: list[SearchResult] = Field(default_factory=list)
    index: IndexStatus = Field(default_factory=IndexStatus)
