"""Answer models of scores, shared by /api/scores, the runs and traces answers and /api/overview."""

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field, field_validator

from ingest.scores.model import DataType, Source

ScoreValue = bool | float | str | None


class ScoreOut(BaseModel):
    """SCORE (design.md §4). `agent`, `version`, `mode` are the run's, when it is stored."""

    score_id: str
    project: str
    name: str
    value: ScoreValue
    label: str | None = Field(None, description="The label of a boolean/categorical score (or of a client's numeric one).")
    data_type: DataType
    comment: str | None
    source: Source
    author: str | None
    created_at: datetime
    trace_id: str | None
    span_id: str | None
    session_id: str | None
    metadata: dict[str, Any] | None
    agent: str | None
    version: str | None
    mode: str | None

    @field_validator("created_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return v.replace(tzinfo=UTC) if v.tzinfo is None else v


class ScoreAggregate(BaseModel):
    """The scores of one name on the runs of one agent, version and day (the run's start day, UTC)."""

    name: str
    data_type: DataType
    agent: str | None
    version: str | None
    day: datetime
    n: int = Field(description="Scores counted.")
    mean: float | None = Field(None, description="Numeric: the mean value.")
    share_true: float | None = Field(None, description="Boolean: the share of true.")
    labels: dict[str, int] | None = Field(None, description="Categorical: how many of each label.")

    @field_validator("day")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return v.replace(tzinfo=UTC) if v.tzinfo is None else v
