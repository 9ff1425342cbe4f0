"""Typed views of `/api/sessions`, `/api/graph` and `/api/views` as the Sessions and Graph pages and the
saved-views sidebar read them.

Like dashboards/models.py: every field has a default and unknown fields are ignored, so a server
that adds a field never breaks a page and one that lacks a field shows it as empty.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SessionSummary(_Model):
    session_id: str = ""
    project: str = ""
    runs: int = 0
    start_time: datetime | None = None
    end_time: datetime | None = None
    last_start: datetime | None = None
    duration_ms: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    steps: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    failures: int = 0
    users: list[str] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list)


class SessionsPage(_Model):
    sessions: list[SessionSummary] = Field(default_factory=list)
    next: str | None = None


class Turn(_Model):
    turn: int = 0
    trace_id: str = ""
    agent: str | None = None
    version: str | None = None
    user_id: str | None = None
    start_time: datetime | None = None
    duration_ms: float | None = None
    ok: bool | None = None
    stop_reason: str | None = None
    steps: int | None = None
    tool_calls: int | None = None
    tool_errors: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    input: str | None = None
    output: str | None = None


class Session(SessionSummary):
    turns: list[Turn] = Field(default_factory=list)
    turns_total: int = 0


class GraphNode(_Model):
    id: str = ""
    kind: str = ""
    name: str = ""
    calls: int = 0
    errors: int = 0
    error_rate: float | None = None
    runs: int = 0
    traces: int = 0


class GraphEdge(_Model):
    source: str = ""
    target: str = ""
    calls: int = 0
    errors: int = 0
    error_rate: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    cost_usd: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    runs: int = 0
    example_traces: list[str] = Field(default_factory=list)


class Graph(_Model):
    runs: int = 0
    runs_matched: int = 0
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)


class SavedView(_Model):
    view_id: str = ""
    project: str = ""
    name: str = ""
    page: str = ""
    filter: str = ""
    since: str | None = None
    until: str | None = None
    params: dict[str, str] = Field(default_factory=dict)
    state: dict[str, str] = Field(default_factory=dict)
    created_by: str | None = None


class SavedViews(_Model):
    views: list[SavedView] = Field(default_factory=list)
