"""Query parameters of the analytics endpoints (failures, tools, cost, diff), validated by pydantic.

Unknown parameters are rejected like everywhere else in the query API (extra="forbid" on
CommonParams): a misspelt filter silently ignored would show unfiltered data that looks filtered.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ingest.api.params import CommonParams, Text

TRACE_ID_PATTERN = r"^[0-9a-fA-F]{32}$"


class FailuresParams(CommonParams):
    limit: int = Field(50, ge=1, le=500, description="Largest clusters returned.")


class ToolsParams(CommonParams):
    """Filters of `GET /api/tools`."""


class CostParams(CommonParams):
    group_by: Literal["model", "provider", "tool", "agent", "version", "project", "user", "conversation", "day"] = "model"
    format: Literal["json", "csv"] = "json"


class DiffParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    a: str = Field(description="Trace id of the baseline run (32 hex chars).", max_length=64)
    b: str = Field(description="Trace id of the run compared with it.", max_length=64)
    project: Text = Field(None, description="Only look in this project.")
