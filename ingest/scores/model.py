"""The score model: what a client sends (`ScoreIn`) and what is stored (`Score`).

Why one resolved form: every write path (HTTP, CLI, queues, evaluators, evaluation events) ends in
the same `Score`, whose value is split into `value_numeric` (numbers; booleans as 1/0) and
`value_label` (categorical labels; booleans as "true"/"false"), so aggregates over any source read
the same two columns.

Why the default id is a digest of target + name + source + author: a retried POST (or a CLI call
run twice, an evaluator re-running a rule) names the same score and is stored once, and the same
person labelling the same run again replaces their earlier label (newer `created_at` wins).

The run's agent, version and mode are not part of a score: they are joined from `runs` when scores
are read, because a score often arrives before its run's spans (end-user feedback races the
batch exporter) and a foreign client's run can be renamed as late spans arrive.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_NAME = 200
MAX_COMMENT = 10_000
MAX_LABEL = 200
MAX_METADATA_BYTES = 16 * 1024
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_HEX16 = re.compile(r"^[0-9a-f]{16}$")
# the times a span can have (ingest/api/params.py says why)
MIN_TIME = datetime(1970, 1, 1)
MAX_TIME = datetime(2262, 4, 11)


class DataType(StrEnum):
    NUMERIC = "numeric"
    BOOLEAN = "boolean"
    CATEGORICAL = "categorical"


class Source(StrEnum):
    """Who produced a score: a person in the UI/CLI, an API client, an LLM judge, a deterministic
    rule, an offline eval run, or the instrumented app itself (OTel evaluation events, feedback)."""

    HUMAN = "human"
    API = "api"
    JUDGE = "judge"
    RULE = "rule"
    EVAL = "eval"
    CLIENT = "client"


Value = bool | int | float | str


def infer_type(value: Value) -> DataType:
    """The data type a value without a declared type has (bool before int: True is an int in Python)."""
    if isinstance(value, bool):
        return DataType.BOOLEAN
    if isinstance(value, int | float):
        return DataType.NUMERIC
    return DataType.CATEGORICAL


def default_score_id(
    name: str, source: str, author: str | None, trace_id: str | None, span_id: str | None, session_id: str | None
) -> str:
    """The deterministic id of a score that names none (see module doc)."""
    key = "\x1f".join(p or "" for p in ("score-v1", trace_id, span_id, session_id, name, source, author))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


class ScoreIn(BaseModel):
    """A score as a client sends it (POST /api/scores, `steplens score add`, `submit_scores`).

    Target: `trace_id` (a run), `trace_id` + `span_id` (a span), or `session_id` (a conversation).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=MAX_NAME, description="What is judged, e.g. `helpfulness`.")
    value: Value = Field(description="A number, true/false, or a categorical label (a string).")
    data_type: DataType | None = Field(None, description="numeric, boolean or categorical; inferred when absent.")
    comment: str | None = Field(None, max_length=MAX_COMMENT)
    source: Source = Source.API
    author: str | None = Field(None, max_length=200, description="Who scored (a person, a rule, a judge model).")
    created_at: datetime | None = Field(None, description="When it was scored (default: when received).")
    trace_id: str | None = Field(None, description="The run's trace id (32 hex).")
    span_id: str | None = Field(None, description="A span of that trace (16 hex).")
    session_id: str | None = Field(None, max_length=512, description="A conversation/session id.")
    score_id: str | None = Field(
        None, min_length=1, max_length=128,
        description="Idempotency id; default derived from target + name + source + author.",
    )
    metadata: dict[str, Any] | None = Field(None, description="Free-form context (rule, model, reason...).")

    @field_validator("trace_id", "span_id")
    @classmethod
    def _lower(cls, v: str | None) -> str | None:
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("trace_id")
    @classmethod
    def _trace(cls, v: str | None) -> str | None:
        if v is not None and not _HEX32.match(v):
            raise ValueError("trace_id must be 32 hex characters")
        return v

    @field_validator("span_id")
    @classmethod
    def _span(cls, v: str | None) -> str | None:
        if v is not None and not _HEX16.match(v):
            raise ValueError("span_id must be 16 hex characters")
        return v

    @field_validator("created_at")
    @classmethod
    def _time(cls, v: datetime | None) -> datetime | None:
        if v is None:
            return None
        if v.tzinfo is not None:
            v = v.astimezone(UTC).replace(tzinfo=None)
        if not MIN_TIME <= v <= MAX_TIME:
            raise ValueError(f"created_at must lie between {MIN_TIME.date()} and {MAX_TIME.date()}")
        return v

    @field_validator("metadata")
    @classmethod
    def _small(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None and len(json.dumps(v, default=str)) > MAX_METADATA_BYTES:
            raise ValueError(f"metadata over {MAX_METADATA_BYTES} bytes as JSON")
        return v

    @model_validator(mode="after")
    def _target_and_value(self) -> ScoreIn:
        if self.trace_id is None and self.session_id is None:
            raise ValueError("a score needs a target: trace_id (a run), trace_id + span_id (a span) or session_id")
        if self.span_id is not None and self.trace_id is None:
            raise ValueError("span_id needs the trace_id of its trace")
        # whether the value fits the type (declared, configured or inferred) is checked by
        # ingest/scores/configs.py `check`, which knows the config and names the field
        return self

    def resolve(self, project: str, now: datetime, data_type: DataType | None = None) -> Score:
        """The stored form: id, time and the split value filled in; `data_type` is the type its
        config declares (else the score's own, else the one its value implies)."""
        data_type = data_type or self.data_type or infer_type(self.value)
        numeric, label = split_value(data_type, self.value)
        return Score(
            project=project,
            score_id=self.score_id or default_score_id(
                self.name, self.source.value, self.author, self.trace_id, self.span_id, self.session_id
            ),
            name=self.name, data_type=data_type, value_numeric=numeric, value_label=label,
            comment=self.comment, source=self.source, author=self.author,
            created_at=self.created_at or now, trace_id=self.trace_id, span_id=self.span_id,
            session_id=self.session_id, metadata=self.metadata,
        )


def value_problem(data_type: DataType, v: Value) -> str | None:
    """Why `v` cannot be a value of `data_type` (None: it can)."""
    if data_type is DataType.BOOLEAN and not isinstance(v, bool):
        return f"a boolean score's value must be true or false, not {v!r}"
    if data_type is DataType.NUMERIC:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return f"a numeric score's value must be a number, not {v!r}"
        try:
            finite = math.isfinite(float(v))
        except OverflowError:
            finite = False
        if not finite:
            return "a numeric score's value must be finite (and within a double's range)"
    if data_type is DataType.CATEGORICAL:
        if not isinstance(v, str):
            return f"a categorical score's value must be a label (a string), not {v!r}"
        if not 1 <= len(v) <= MAX_LABEL:
            return f"a categorical label must be 1 to {MAX_LABEL} characters"
    return None


def split_value(data_type: DataType, value: Value) -> tuple[float | None, str | None]:
    """(value_numeric, value_label) of a value of `data_type` (see module doc)."""
    if data_type is DataType.BOOLEAN:
        return (1.0 if value else 0.0), ("true" if value else "false")
    if data_type is DataType.NUMERIC:
        return float(value), None
    return None, str(value)


def join_value(data_type: str, numeric: float | None, label: str | None) -> Value | None:
    """The client-facing value of a stored score."""
    if data_type == DataType.BOOLEAN:
        return None if numeric is None else numeric >= 0.5
    if data_type == DataType.NUMERIC:
        return numeric
    return label


class Score(BaseModel):
    """A resolved, storable score (one row of the `scores` table)."""

    project: str
    score_id: str
    name: str
    data_type: DataType
    value_numeric: float | None
    value_label: str | None
    comment: str | None
    source: Source
    author: str | None
    created_at: datetime
    trace_id: str | None
    span_id: str | None
    session_id: str | None
    metadata: dict[str, Any] | None = None

    @property
    def value(self) -> Value | None:
        return join_value(self.data_type, self.value_numeric, self.value_label)
