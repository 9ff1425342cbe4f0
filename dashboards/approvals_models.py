"""Typed view of `/api/approvals` as the Approvals page reads it.

Like dashboards/models.py: every field has a default and unknown fields are ignored, so a server
that adds a field never breaks the page and one that lacks a field shows it as empty.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Approval(_Model):
    approval_id: str = ""
    project: str = ""
    status: str = ""
    tool: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)
    risk: str | None = None
    agent: str | None = None
    agent_version: str | None = None
    trace_id: str | None = None
    summary: str | None = None
    wait_s: float | None = None
    created_at: datetime | None = None
    decided_at: datetime | None = None
    decided_by: str | None = None
    reason: str | None = None


class Approvals(_Model):
    approvals: list[Approval] = Field(default_factory=list)
