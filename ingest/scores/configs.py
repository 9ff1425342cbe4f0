"""Score configs: which score names exist, their type, numeric range or label set.

Why configs are optional: a team starts by POSTing scores and declares them once they settle; a
score with no config is accepted with its type inferred from its value, unless `scores_strict` is
on. A score that breaks its config is refused whole (422 naming the field and the reason), never
stored half-right: a 0..1 helpfulness score of 7 would skew every mean computed later.

Where configs come from: `[[scores]]` in steplens.toml (for every project, or the one named) and
`POST /api/score-configs` (the key's project, kept in the `score_configs` table). A name declared
in the file is the file's: the API cannot redefine it (409), so what the operator wrote is what is
enforced.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ingest.scores.model import MAX_LABEL, MAX_NAME, DataType, ScoreIn, infer_type, value_problem

MAX_CATEGORIES = 100


class ScoreConfig(BaseModel):
    """One declared score (`[[scores]]` in steplens.toml, or `POST /api/score-configs`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=MAX_NAME, description="The score's name, e.g. `helpfulness`.")
    data_type: DataType = Field(description="numeric, boolean or categorical.")
    min: float | None = Field(None, description="Smallest allowed value (numeric only).")
    max: float | None = Field(None, description="Largest allowed value (numeric only).")
    categories: list[str] | None = Field(
        None, max_length=MAX_CATEGORIES, description="The allowed labels (categorical only; required there)."
    )
    description: str | None = Field(None, max_length=2000)
    project: str | None = Field(None, description="In steplens.toml: only this project (default: every project).")

    @model_validator(mode="after")
    def _consistent(self) -> ScoreConfig:
        numeric = self.data_type is DataType.NUMERIC
        if not numeric and (self.min is not None or self.max is not None):
            raise ValueError(f"score config {self.name!r}: min/max only apply to numeric scores")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"score config {self.name!r}: min ({self.min}) is above max ({self.max})")
        if self.data_type is DataType.CATEGORICAL:
            if not self.categories:
                raise ValueError(f"score config {self.name!r}: a categorical score needs its categories (labels)")
            if len(set(self.categories)) != len(self.categories):
                raise ValueError(f"score config {self.name!r}: categories repeat a label")
            if any(not 1 <= len(c) <= MAX_LABEL for c in self.categories):
                raise ValueError(f"score config {self.name!r}: each category is 1 to {MAX_LABEL} characters")
        elif self.categories is not None:
            raise ValueError(f"score config {self.name!r}: categories only apply to categorical scores")
        return self


@dataclass(frozen=True)
class Violation:
    """Why one score of a batch was refused: the field and a reason a person can act on."""

    index: int
    field: str
    reason: str


def check(score: ScoreIn, config: ScoreConfig | None, index: int = 0, strict: bool = False) -> Violation | None:
    """The first way `score` breaks `config` (None when it complies, or has no config and not strict)."""
    if config is None:
        if strict:
            return Violation(index, "name", f"no score config named {score.name!r} (scores_strict is on: declare it "
                                            "in steplens.toml [[scores]] or POST /api/score-configs)")
        problem = value_problem(score.data_type or infer_type(score.value), score.value)
        return Violation(index, "value", problem) if problem else None
    if score.data_type is not None and score.data_type is not config.data_type:
        return Violation(index, "data_type", f"score {score.name!r} is declared {config.data_type.value}, "
                                             f"not {score.data_type.value}")
    problem = value_problem(config.data_type, score.value)
    if problem:
        return Violation(index, "value", f"{problem} (score {score.name!r} is {config.data_type.value})")
    if config.data_type is DataType.NUMERIC:
        v = float(score.value)
        if config.min is not None and v < config.min:
            return Violation(index, "value", f"{score.value} is below the minimum {config.min:g} of {score.name!r}")
        if config.max is not None and v > config.max:
            return Violation(index, "value", f"{score.value} is above the maximum {config.max:g} of {score.name!r}")
    if config.data_type is DataType.CATEGORICAL and config.categories and score.value not in config.categories:
        return Violation(index, "value", f"{score.value!r} is not a label of {score.name!r}: one of "
                                         f"{', '.join(config.categories)}")
    return None


class ConfigSet:
    """The configs that apply to one project: the file's, then the API's (the file wins a name)."""

    def __init__(self, file_configs: Iterable[ScoreConfig], api_configs: Iterable[ScoreConfig] = ()) -> None:
        self._by_name: dict[str, ScoreConfig] = {}
        for c in api_configs:
            self._by_name[c.name] = c
        self.file_names: frozenset[str] = frozenset(c.name for c in file_configs)
        for c in file_configs:
            self._by_name[c.name] = c

    def get(self, name: str) -> ScoreConfig | None:
        return self._by_name.get(name)

    def all(self) -> list[ScoreConfig]:
        return sorted(self._by_name.values(), key=lambda c: c.name)

    def type_of(self, score: ScoreIn) -> DataType:
        config = self.get(score.name)
        return config.data_type if config else (score.data_type or infer_type(score.value))


def file_configs_for(configs: Iterable[ScoreConfig], project: str) -> list[ScoreConfig]:
    """The steplens.toml configs that apply to `project` (a project's own beats an every-project one)."""
    general = {c.name: c for c in configs if c.project is None}
    own = {c.name: c for c in configs if c.project == project}
    return list({**general, **own}.values())


def check_file_configs(configs: Iterable[ScoreConfig]) -> None:
    """Refuse a steplens.toml that declares one name twice for the same project (ValueError)."""
    seen: set[tuple[str | None, str]] = set()
    for c in configs:
        key = (c.project, c.name)
        if key in seen:
            where = f"project {c.project!r}" if c.project else "every project"
            raise ValueError(f"[[scores]] declares {c.name!r} twice for {where}")
        seen.add(key)
