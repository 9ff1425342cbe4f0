"""Evaluator rules as they appear in steplens.toml (`[[evaluators]]`).

Why validated at load time (as alert rules are, ingest/alerts/rules.py): a rule whose regex does not
compile, whose JSON schema is not a schema, or whose judge names no model must stop the server with
a message naming the rule, not fail on every run at 3 a.m.

    [[evaluators]]
    name = "answer-mentions-refund"
    agent = "ticket"
    sample_rate = 0.5
    delay = "30s"
    evaluator = { kind = "contains", text = ["refund"] }
    score = { name = "mentions_refund", type = "boolean" }
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ingest.analytics.durations import Duration
from tracer.conventions import RunMode

ScoreType = Literal["boolean", "numeric", "categorical"]
MAX_RULE_NAME = 200


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContainsParams(_Strict):
    """The answer contains the texts (`match = "all"`, default) or one of them (`"any"`)."""

    kind: Literal["contains"]
    text: list[str] = Field(min_length=1, description="Texts to look for in the run's answer.")
    match: Literal["all", "any"] = "all"
    case_sensitive: bool = False


class RegexParams(_Strict):
    """The answer matches a regular expression (Python `re.search`)."""

    kind: Literal["regex"]
    pattern: str = Field(min_length=1)
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"pattern does not compile: {exc}") from None
        return v


class JsonSchemaParams(_Strict):
    """The answer is JSON valid against a JSON schema (draft 2020-12 unless `$schema` says otherwise)."""

    kind: Literal["json_schema"]
    json_schema: dict[str, Any] = Field(alias="schema")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("json_schema")
    @classmethod
    def _is_schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        import jsonschema

        try:
            jsonschema.validators.validator_for(v).check_schema(v)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"not a valid JSON schema: {exc.message}") from None
        return v


class ToolSequenceParams(_Strict):
    """The run called these tools in this order: as a subsequence of its calls (default), or exactly."""

    kind: Literal["tool_sequence"]
    tools: list[str] = Field(min_length=1)
    exact: bool = False


class ForbiddenToolsParams(_Strict):
    """The run called none of these tools."""

    kind: Literal["forbidden_tools"]
    tools: list[str] = Field(min_length=1)


class MaxStepsParams(_Strict):
    kind: Literal["max_steps"]
    limit: int = Field(ge=0, le=1_000_000_000)


class MaxCostParams(_Strict):
    kind: Literal["max_cost"]
    limit_usd: float = Field(ge=0, allow_inf_nan=False)


class MaxLatencyParams(_Strict):
    kind: Literal["max_latency"]
    limit_s: float = Field(gt=0, allow_inf_nan=False)


class NoToolErrorParams(_Strict):
    """No tool call of the run failed."""

    kind: Literal["no_tool_error"]


DEFAULT_JUDGE_PROMPT = """\
You are grading one run of an AI agent.

Task given to the agent:
${task}

The agent's final answer:
${answer}

What the agent did, step by step:
${steps}

Tool results it saw:
${tool_results}

Question: ${question}
"""


class JudgeParams(_Strict):
    """An LLM grades the run: the prompt template is filled with the run's task, answer, steps and
    tool results (each cut to `max_field_chars`), the model answers JSON `{"score": ..., "reason": ...}`."""

    kind: Literal["judge"]
    model: str = Field(min_length=1, description="The judge model, e.g. gpt-4o-mini.")
    base_url: str = Field("https://api.openai.com/v1", description="OpenAI-compatible endpoint.")
    api_key_env: str | None = Field(None, description="Environment variable holding the judge endpoint's key.")
    fallback_models: list[str] = Field(default_factory=list, description="Tried in order when the model fails.")
    question: str = Field("Did the agent answer the task correctly and helpfully?", max_length=4000)
    prompt: str = Field(DEFAULT_JUDGE_PROMPT, min_length=1, max_length=100_000,
                        description="Template: ${task} ${answer} ${steps} ${tool_results} ${question} ${agent}.")
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(400, ge=1, le=32_000)
    max_field_chars: int = Field(4000, ge=100, le=200_000, description="Longest task/answer/steps/tools text sent.")
    attempts: int = Field(2, ge=1, le=5, description="Judge calls tried when its output cannot be read.")
    timeout_s: float = Field(120.0, gt=0, le=3600, description="Most seconds one judge call may take.")


EvaluatorParams = Annotated[
    ContainsParams | RegexParams | JsonSchemaParams | ToolSequenceParams | ForbiddenToolsParams | MaxStepsParams
    | MaxCostParams | MaxLatencyParams | NoToolErrorParams | JudgeParams,
    Field(discriminator="kind"),
]


class ScoreSpec(_Strict):
    """The score a rule writes (its config, if declared under `[[scores]]`, is enforced on write)."""

    name: str = Field(min_length=1, max_length=200)
    type: ScoreType = "boolean"
    min: float | None = Field(None, description="numeric: smallest value a judge may give.")
    max: float | None = Field(None, description="numeric: largest value a judge may give.")
    labels: list[str] | None = Field(None, description="categorical: the labels a judge may give.")
    pass_at: float | None = Field(None, description="numeric: a value at or above it counts as passed.")
    pass_labels: list[str] | None = Field(None, description="categorical: the labels that count as passed.")

    @model_validator(mode="after")
    def _consistent(self) -> ScoreSpec:
        if self.type == "categorical" and not self.labels:
            raise ValueError(f"score {self.name!r}: a categorical score needs `labels`")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"score {self.name!r}: min is above max")
        return self


class EvaluatorRule(_Strict):
    """One online evaluator rule: which runs, which evaluator, which score."""

    name: str = Field(min_length=1, max_length=MAX_RULE_NAME)
    project: str | None = Field(None, description="Only this project; unset = every project.")
    agent: str | None = None
    version: str | None = None
    environment: str | None = None
    modes: list[RunMode] = Field(default_factory=lambda: [RunMode.LIVE], min_length=1,
                                 description="Run modes scored (live also covers runs naming none).")
    ok: bool | None = Field(None, description="Only successful (true) or failed (false) runs.")
    stop_reason: str | None = None
    sample_rate: float = Field(1.0, ge=0, le=1, description="Share of matching runs scored (by trace id hash).")
    delay: Duration = Field(timedelta(seconds=30), description="Wait after a run ends before scoring it.")
    lookback: Duration = Field(timedelta(hours=24), description="Online: runs that ended within this long.")
    max_attempts: int = Field(3, ge=1, le=10, description="Tries of one evaluation before it is an error.")
    enabled: bool = True
    evaluator: EvaluatorParams
    score: ScoreSpec

    @model_validator(mode="after")
    def _score_fits(self) -> EvaluatorRule:
        if self.evaluator.kind != "judge" and self.score.type == "categorical":
            raise ValueError(f"evaluator rule {self.name!r}: built-in evaluators write boolean or numeric scores")
        return self

    @property
    def is_judge(self) -> bool:
        return self.evaluator.kind == "judge"

    @property
    def author(self) -> str:
        """Who a score of this rule is by: the rule (and the judge model)."""
        if isinstance(self.evaluator, JudgeParams):
            return f"evaluator:{self.name} ({self.evaluator.model})"
        return f"evaluator:{self.name}"

    def applies_to(self, project: str) -> bool:
        return self.project is None or self.project == project


def check_evaluator_rules(rules: list[EvaluatorRule]) -> None:
    """Names unique (a rule's name is part of each evaluation's key); ValueError naming the repeats."""
    names = [r.name for r in rules]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"evaluator rule names must be unique; repeated: {', '.join(dupes)}")


def eval_run_id(rule: str) -> str:
    """`steplens.eval.run_id` of a judge's own runs: every judge run of a rule lists under it."""
    return f"evaluator:{rule}"
