"""The plan: a versioned list of steps with dependencies, as the planner wrote it.

Two layers on purpose. `PlanDraft`/`StepDraft` are what an LLM sends: loosely shaped, validated
by pydantic, ids are only the model's own labels. `Plan`/`PlanStep` are what the kernel executes:
ids are assigned by the kernel from a run-wide counter (`IdAllocator`) so an id is never reused
across versions, which keeps traces, variables and lessons unambiguous after any replan.

Arguments may reference an earlier step's output with `#E2` (the whole output) or `#E2.rows[0]`
(a path into its JSON). References are plain strings inside the arguments, so a plan stays JSON.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import json_repair
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kernel.plan.signature import normalise_literals
from tracer.conventions import ReplanGranularity

# `#label` followed by an optional path of `.field` / `[index]` parts.
REF_RE = re.compile(r"#([A-Za-z][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+|\[\d+\])*)")
# Labels of this shape are always meant as references (so a dangling one is reported, never
# silently passed to a tool as text); other `#words` count only when they name a known step.
_CANONICAL_ID_RE = re.compile(r"^E\d+$")
_FENCE_RE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)


class FailurePolicy(StrEnum):
    """What a failed step does to the run. `after_the_fact` is ReWOO style: record and go on."""

    REPLAN = "replan"
    AFTER_THE_FACT = "after_the_fact"


class Fallback(BaseModel):
    """Another way to get the same result when the step's tool keeps failing for environmental
    reasons (timeout, rate limit)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    tool: str
    args: dict[str, Any] = Field(default_factory=dict, alias="arguments")


class StepDraft(BaseModel):
    """One step as an LLM wrote it. Unknown keys are ignored: models add commentary fields."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    id: str = Field(min_length=1, max_length=64)
    action: str = ""
    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict, alias="arguments")
    depends_on: list[str] = Field(default_factory=list)
    on_failure: FailurePolicy = FailurePolicy.REPLAN
    fallback: Fallback | None = None
    expect: dict[str, Any] | None = None
    premise: bool = False
    replaces: str | None = None

    @field_validator("id", "replaces")
    @classmethod
    def _strip_hash(cls, value: str | None) -> str | None:
        return value.lstrip("#").strip() if isinstance(value, str) else value

    @field_validator("depends_on", mode="before")
    @classmethod
    def _deps(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            value = [value]
        return [v.lstrip("#").strip() if isinstance(v, str) else v for v in value]


class PlanDraft(BaseModel):
    """A whole plan (or replan) as an LLM wrote it."""

    model_config = ConfigDict(extra="ignore")

    steps: list[StepDraft] = Field(min_length=1)
    answer: str | None = None
    cause: str | None = None
    void: list[str] = Field(default_factory=list)


class PlanStep(BaseModel):
    """One executable step. `origin` is the id of the first step in its replacement lineage: a
    step that replaces E3 (and whatever replaces that) shares E3's origin, which is how the
    breakers and the router recognise "the same step failing again" across versions."""

    id: str
    action: str = ""
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[str] = Field(default_factory=list)
    on_failure: FailurePolicy = FailurePolicy.REPLAN
    fallback: Fallback | None = None
    expect: dict[str, Any] | None = None
    premise: bool = False
    origin: str
    version: int  # the plan version that introduced the step

    def all_deps(self, known: set[str]) -> list[str]:
        """Explicit dependencies plus every step its arguments reference, in first-seen order."""
        out = list(dict.fromkeys(self.depends_on))
        for ref in find_refs(self.args, known):
            if ref.step_id not in out:
                out.append(ref.step_id)
        if self.fallback is not None:
            for ref in find_refs(self.fallback.args, known):
                if ref.step_id not in out:
                    out.append(ref.step_id)
        return out


class Plan(BaseModel):
    """One version of the plan: the steps it holds (completed ones carried over included)."""

    version: int
    steps: list[PlanStep]
    answer: str | None = None
    cause: str | None = None
    granularity: ReplanGranularity | None = None  # None for the first plan

    def ids(self) -> list[str]:
        return [s.id for s in self.steps]

    def get(self, step_id: str) -> PlanStep | None:
        return next((s for s in self.steps if s.id == step_id), None)

    def fingerprint(self) -> str:
        """A hash of the plan's action sequence (tools and literal arguments, references masked):
        ids change at every replan, so ids must not make two identical plans look different."""
        seq = [[s.tool, _mask_refs(s.args)] for s in self.steps]
        payload = json.dumps(seq, sort_keys=True, ensure_ascii=False, default=repr)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def shape_fingerprint(self) -> str:
        """The fingerprint with literal arguments normalised (kernel/plan/signature.py): the same
        for two plans that differ only in numbers, quoted strings, ids or single-token values."""
        seq = [[s.tool, normalise_literals(_mask_refs(s.args))] for s in self.steps]
        payload = json.dumps(seq, sort_keys=True, ensure_ascii=False, default=repr)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    step_id: str
    path: str  # ".rows[0]" or ""
    text: str  # the whole match, e.g. "#E2.rows[0]"


def _is_ref_label(label: str, known: set[str] | None) -> bool:
    return bool(_CANONICAL_ID_RE.match(label)) or (known is not None and label in known)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def find_refs(value: Any, known: set[str] | None = None) -> list[Ref]:
    """Every reference inside `value` (nested dicts/lists of strings)."""
    refs: list[Ref] = []
    for text in _strings(value):
        for m in REF_RE.finditer(text):
            if _is_ref_label(m.group(1), known):
                refs.append(Ref(m.group(1), m.group(2), m.group(0)))
    return refs


def rewrite_refs(value: Any, mapping: dict[str, str]) -> Any:
    """`value` with every `#old` reference renamed to `#new` per `mapping` (other text untouched)."""
    if not mapping:
        return value
    if isinstance(value, str):
        return REF_RE.sub(lambda m: f"#{mapping.get(m.group(1), m.group(1))}{m.group(2)}", value)
    if isinstance(value, dict):
        return {k: rewrite_refs(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [rewrite_refs(v, mapping) for v in value]
    return value


def _mask_refs(value: Any) -> Any:
    if isinstance(value, str):
        return REF_RE.sub(lambda m: f"#{m.group(2)}", value)
    if isinstance(value, dict):
        return {k: _mask_refs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_refs(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# ids and parsing
# --------------------------------------------------------------------------------------------


class IdAllocator:
    """Run-wide step ids `E1, E2, ...`: never reused, whatever the LLM called its steps."""

    def __init__(self) -> None:
        self._next = 1

    def take(self) -> str:
        step_id = f"E{self._next}"
        self._next += 1
        return step_id


class PlanFormatError(ValueError):
    """The LLM's plan could not be used (not JSON, wrong shape). The message says why."""


def parse_plan_draft(text: str | None) -> PlanDraft:
    """The LLM's reply as a `PlanDraft`, or `PlanFormatError`. Accepts a code fence, a bare list
    of steps, and JSON that json-repair can fix (quotes, trailing commas)."""
    if not text or not text.strip():
        raise PlanFormatError("the reply was empty; expected a JSON object with a `steps` list")
    body = text.strip()
    m = _FENCE_RE.search(body)
    if m:
        body = m.group(1).strip()
    try:
        data = json.loads(body)
    except ValueError:
        try:
            data = json_repair.loads(body)
        except Exception as exc:  # json-repair is best effort
            raise PlanFormatError(f"the reply is not JSON ({type(exc).__name__})") from exc
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict):
        raise PlanFormatError(f"expected a JSON object with a `steps` list, got {type(data).__name__}")
    try:
        return PlanDraft.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'plan'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise PlanFormatError(f"the plan does not have the expected shape: {problems}") from exc
