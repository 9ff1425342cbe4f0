"""What a queue is: its filter over runs, its sampling rate, the score configs it fills, who works it.

Why pydantic models with closed fields: a queue arrives from two places (`POST /api/queues` and
`[[queues]]` in steplens.toml) and must be refused the same way in both, with the field named: an
unknown filter key is a typo that would otherwise silently widen the queue to every run.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tracer.conventions import RunMode, StopReason

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
USER_PATTERN = r"^[^\x00-\x1f]{1,200}$"  # any printable text: people are named as they like
MAX_ASSIGNEES = 100
MAX_CONFIGS = 20

UserName = Annotated[str, Field(min_length=1, max_length=200, pattern=USER_PATTERN)]
ConfigName = Annotated[str, Field(min_length=1, max_length=200)]


class ScoreBelow(BaseModel):
    """Runs whose latest score `name` is below `value` (numeric or boolean configs; false counts as 0)."""

    model_config = ConfigDict(extra="forbid")

    name: ConfigName
    value: float = Field(allow_inf_nan=False)


class QueueFilter(BaseModel):
    """Which runs may enter: every given field must hold (AND); an empty filter takes every run.

    The run facts are those of `GET /api/runs` (design.md §4). `modes` defaults to live only, like
    every read path: shadow, eval and replay runs enter a queue only when it asks for them.
    """

    model_config = ConfigDict(extra="forbid")

    agent: str | None = Field(None, max_length=200)
    version: str | None = Field(None, max_length=200)
    environment: str | None = Field(None, max_length=200)
    modes: list[RunMode] = Field(default_factory=lambda: [RunMode.LIVE], min_length=1)
    ok: bool | None = None
    stop_reason: StopReason | None = None
    min_cost: float | None = Field(None, ge=0, allow_inf_nan=False)
    min_steps: int | None = Field(None, ge=0, le=1_000_000_000)
    score_missing: ConfigName | None = Field(None, description="Only runs without a score of this name yet.")
    score_below: ScoreBelow | None = None


class QueueSpec(BaseModel):
    """A queue as created or declared. `name` is unique within its project."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, description="Letters, digits, `_.-`; unique per project.")
    description: str | None = Field(None, max_length=2000)
    filter: QueueFilter = Field(default_factory=QueueFilter)
    sampling_rate: float = Field(
        1.0, ge=0.0, le=1.0, allow_inf_nan=False,
        description="Fraction of matching runs that enter, chosen by a hash of the queue and the trace id.",
    )
    score_configs: list[ConfigName] = Field(min_length=1, max_length=MAX_CONFIGS,
                                            description="The score configs a person fills per run.")
    assignees: list[UserName] = Field(default_factory=list, max_length=MAX_ASSIGNEES,
                                      description="Who may take items; empty: anyone with the annotate scope.")
    labels_per_item: int = Field(
        1, ge=1, le=10,
        description="How many different people decide each run (2 or more gives agreement figures).",
    )
    lease_s: int = Field(900, ge=1, le=86_400,
                         description="Seconds a taken item stays with its person before others may take it.")

    @field_validator("score_configs", "assignees")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("names must be distinct")
        return value

    @model_validator(mode="after")
    def _enough_people(self) -> QueueSpec:
        if self.assignees and self.labels_per_item > len(self.assignees):
            raise ValueError(f"labels_per_item {self.labels_per_item} needs at least as many assignees "
                             f"(has {len(self.assignees)})")
        return self


class DeclaredQueue(QueueSpec):
    """A `[[queues]]` entry of steplens.toml: a queue of `project` kept as the file says at startup."""

    project: str = Field("default", min_length=1, max_length=200)
