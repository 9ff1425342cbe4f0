"""What `POST /api/datasets` takes and answers.

Why the selection is the runs API's own filter (the same parameters as `GET /api/runs`), a list of
trace ids, or an annotation queue's labelled runs: a person finds the runs worth keeping on the Runs page or with the API first, then saves
exactly that selection; a second vocabulary for the same filters would drift from the first.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ingest.api.params import RunsParams

MAX_DATASET_RUNS = 1000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_HEX32 = re.compile(r"^[0-9a-f]{32}$")


class RunSelection(RunsParams):
    """The runs filter of `GET /api/runs`: the dataset is the page it lists (`limit` runs, at most
    1000, in its `sort`/`order`); no cursor."""

    @model_validator(mode="after")
    def _no_paging(self) -> RunSelection:
        if self.cursor is not None:
            raise ValueError("a dataset selects runs by filter; leave out cursor")
        return self


class DatasetIn(BaseModel):
    """A dataset to save: which runs, and how each becomes an eval case."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="1-128 characters: letters, digits, `_`, `.`, `-` (it names the download).")
    description: str | None = Field(None, max_length=2000)
    filter: RunSelection | None = Field(None, description="The runs `GET /api/runs` lists with these parameters.")
    trace_ids: list[str] | None = Field(None, max_length=MAX_DATASET_RUNS, description="These runs, in this order.")
    queue: str | None = Field(None, min_length=1, max_length=200,
                              description="The runs people labelled in this annotation queue of your project "
                              "(their labels are scores: a `correction` one is the expected answer).")
    expected: Literal["correction_or_answer", "answer", "correction", "none"] = Field(
        "correction_or_answer",
        description="The expected answer: a reviewer's correction (the latest `correction_score` on the run: its "
        "comment, else its label), the run's own answer, either (correction first), or none.",
    )
    correction_score: str = Field("correction", min_length=1, max_length=200)
    tools: Literal["sequence", "set", "none"] = Field(
        "sequence", description="The run's tools as the expectation: the tools that succeeded, in order "
        "(tools_sequence), the tools called (tools_set), or none.",
    )
    forbidden_tools: list[str] = Field(default_factory=list, max_length=200,
                                       description="Tools no run of the dataset may call.")
    replace: bool = Field(False, description="Replace a dataset of this name (otherwise 409).")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("a dataset name is 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit")
        return v

    @field_validator("trace_ids")
    @classmethod
    def _ids(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return None
        ids = [t.strip().lower() for t in v]
        bad = [t for t in ids if not _HEX32.match(t)]
        if bad:
            raise ValueError(f"trace ids are 32 hex characters: {', '.join(bad[:5])}")
        return list(dict.fromkeys(ids))  # a run named twice is one case

    @model_validator(mode="after")
    def _one_selection(self) -> DatasetIn:
        if sum(x is not None for x in (self.filter, self.trace_ids, self.queue)) != 1:
            raise ValueError("select the runs with exactly one of `filter` (the runs API's filters), `trace_ids` "
                             "or `queue` (an annotation queue's labelled runs)")
        if self.trace_ids is not None and not self.trace_ids:
            raise ValueError("trace_ids is empty")
        return self


class Skipped(BaseModel):
    trace_id: str
    reason: str


class DatasetInfo(BaseModel):
    project: str
    name: str
    description: str | None
    cases: int
    created_at: datetime
    created_by: str | None


class DatasetCreated(DatasetInfo):
    skipped: list[Skipped] = Field(description="Selected runs that could not become a case, with the reason.")


class DatasetList(BaseModel):
    datasets: list[DatasetInfo]
