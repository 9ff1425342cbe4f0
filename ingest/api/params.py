"""Query parameters of the read endpoints, validated by pydantic so bad input is a clear 422.

Unknown parameters are rejected (extra="forbid"): a misspelt filter silently ignored would show
the caller unfiltered data that looks filtered.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
    model_validator,
)

from ingest.api.access import ReadAccess
from ingest.queries.filters import LIVE_ONLY, CommonFilters
from tracer.conventions import RunMode

_RELATIVE = re.compile(r"^\s*(\d{1,9})\s*(s|m|h|d|w)\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DATETIME = TypeAdapter(datetime)

# The times a span can have: OTLP timestamps are nanoseconds since the Unix epoch, and int64
# nanoseconds (what most OTel consumers hold them in) end in April 2262. A time parameter outside
# is refused (422 naming it) instead of overflowing date arithmetic in a query (a 500).
MIN_TIME = datetime(1970, 1, 1)
MAX_TIME = datetime(2262, 4, 11)
# Largest integer any query parameter takes (a count or a limit; DuckDB's INTEGER).
MAX_INT_PARAM = 2**31 - 1


def parse_time(value: object, now: datetime | None = None) -> datetime | None:
    """ISO 8601 (naive means UTC) or a relative age like `24h`, `30m`, `7d`, `2w`; returns naive UTC.

    Relative values count back from now: `since=24h` is "the last 24 hours".
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        text = str(value).strip()
        match = _RELATIVE.match(text)
        if match:
            amount, unit = int(match.group(1)), match.group(2).lower()
            now = now or datetime.now(UTC)
            try:
                dt = now - timedelta(**{_UNITS[unit]: amount})
            except OverflowError as exc:
                raise ValueError(f"relative time {text!r} reaches before year 1") from exc
        else:
            try:
                dt = _DATETIME.validate_python(text)
            except ValueError as exc:
                raise ValueError(
                    f"{text!r} is neither ISO 8601 (e.g. 2025-01-31T12:00:00Z) nor a relative age (e.g. 24h, 7d)"
                ) from exc
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC).replace(tzinfo=None)
    if not MIN_TIME <= dt <= MAX_TIME:
        raise ValueError(
            f"{dt.isoformat()}Z is outside the times spans can have: {MIN_TIME.isoformat()}Z to {MAX_TIME.isoformat()}Z"
        )
    return dt


TimeParam = Annotated[datetime | None, BeforeValidator(parse_time)]

ALL_MODES = "all"
MODE_VALUES = tuple(m.value for m in RunMode)


def parse_modes(value: str | None) -> frozenset[str] | None:
    """`mode`: one run mode, a comma-separated list of them, or `all` (None: every mode, including
    values outside the four a client may have sent). Unset means live."""
    if value is None:
        return LIVE_ONLY
    parts = {p.strip().lower() for p in value.split(",") if p.strip()}
    if not parts:
        raise ValueError(f"mode is empty: give {', '.join(MODE_VALUES)}, a comma-separated list of them, or all")
    if ALL_MODES in parts:
        return None
    unknown = sorted(parts - set(MODE_VALUES))
    if unknown:
        raise ValueError(f"unknown mode {', '.join(unknown)}: use {', '.join(MODE_VALUES)} (comma-separated) or all")
    return frozenset(parts)


MODE_HELP = (
    "Run modes: live (default; also runs that name no mode), shadow, eval, replay, a comma-separated list, or all."
)
Text = Annotated[str | None, Field(max_length=512)]


class CommonParams(BaseModel):
    """Filters every read endpoint accepts."""

    # inf/nan (e.g. `min_cost=1e400`) are not numbers a filter can mean: 422, not a query.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    project: Text = Field(None, description="Only this project (can narrow what your key reads, never widen).")
    since: TimeParam = Field(None, description="Runs starting at or after: ISO 8601 or relative (24h, 7d).")
    until: TimeParam = Field(None, description="Runs starting before: ISO 8601 or relative.")
    agent: Text = None
    version: Text = None
    environment: Text = None
    mode: Text = Field(None, description=MODE_HELP)

    @field_validator("mode")
    @classmethod
    def _mode(cls, v: str | None) -> str | None:
        parse_modes(v)  # a bad `mode` is a 422 naming it
        return v

    def modes(self) -> frozenset[str] | None:
        """The run modes in scope (None: all); live when `mode` is not given."""
        return parse_modes(self.mode)

    def to_filters(self, access: ReadAccess, *, until: datetime | None = None) -> CommonFilters:
        """These filters narrowed to the projects the caller may read (the one place a `project`
        parameter meets the key's scope); `until` replaces the parameter (e.g. "now")."""
        return CommonFilters(
            projects=access.narrow(self.project),
            since=self.since,
            until=until if until is not None else self.until,
            agent=self.agent,
            version=self.version,
            environment=self.environment,
            modes=self.modes(),
        )

    @model_validator(mode="after")
    def _range(self) -> CommonParams:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError(f"since ({self.since.isoformat()}) must be before until ({self.until.isoformat()})")
        return self


class RunsParams(CommonParams):
    """Filters, sort and paging of `GET /api/runs`."""

    ok: bool | None = None
    stop_reason: Text = None
    model: Text = Field(None, description="Runs that used this model (request or response model).")
    user: Text = None
    conversation: Text = None
    min_cost: float | None = Field(None, ge=0)
    min_steps: int | None = Field(None, ge=0, le=MAX_INT_PARAM)
    q: Text = Field(None, description="Case-insensitive substring of the run name or agent.")
    eval_run_id: Text = Field(None, description="Runs of this evaluation (`steplens eval run` prints its id).")
    eval_case_id: Text = Field(None, description="Runs of this evaluation case id.")
    task_id: Text = Field(None, description="Runs of this async task (kernel.tasks; `steplens tasks submit` prints its id).")
    release: Text = Field(None, description="Runs routed by this gray release (`steplens.release.name`).")
    cohort: Literal["stable", "candidate", "shadow"] | None = Field(
        None, description="Runs of this gray-release cohort; shadow runs are mode shadow (add mode=shadow or all).")
    filter: str | None = Field(
        None, max_length=4000,
        description='Filter expression over the run and its spans, e.g. attributes["gen_ai.tool.name"] = "refund" '
        "and steps > 5 (design.md §4 Filter expressions).",
    )
    sort: Literal["start_time", "duration_ms", "cost_usd", "steps", "input_tokens"] = "start_time"
    order: Literal["desc", "asc"] = "desc"
    limit: int = Field(50, ge=1, le=1000)
    cursor: str | None = Field(None, max_length=4096, description="`next` of the previous page.")

    def modes(self) -> frozenset[str] | None:
        """As everywhere, live unless `mode` says otherwise; but asking for an evaluation's runs
        (`eval_run_id`, `eval_case_id`) without a `mode` means its runs, whatever their mode."""
        if self.mode is None and (self.eval_run_id is not None or self.eval_case_id is not None):
            return None
        return parse_modes(self.mode)


class TraceParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: Text = Field(None, description="Only look in this project.")


class OverviewParams(CommonParams):
    """Filters of `GET /api/overview`; the bucket size follows from the range."""
