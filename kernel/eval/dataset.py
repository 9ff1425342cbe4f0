"""Evaluation datasets: JSONL, one case per line, each a task with what a right run looks like.

    {"id": "where-001", "category": "simple", "task": "Ticket T-5001: where is my order A1003?",
     "expect": {"answer_contains": ["A1003", "delivered"], "tools_sequence": ["query_order", "resolve_ticket"],
                "tools_set": null, "forbidden_tools": ["create_refund_request"], "max_steps": 3}}

Why every line is checked before anything runs: a typo in line 47 should cost a second, not a
half-finished evaluation. Problems are collected (line number and reason) and reported together.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Expectations(BaseModel):
    """What a passing run must show. Every given check must hold; absent checks are skipped.

    - answer_contains: substrings of the final answer (case-insensitive); a run without an answer fails.
    - tools_sequence: tools that must have *succeeded* in this order (other calls may come between).
    - tools_set: tools that must each have been called at least once (any outcome, any order).
    - forbidden_tools: tools that must not have been called at all.
    - max_steps: most loop steps the run may take.
    - ok: whether the run must finish (default true; false for cases where giving up is right).
    """

    model_config = ConfigDict(extra="forbid")

    answer_contains: list[str] = Field(default_factory=list)
    tools_sequence: list[str] | None = None
    tools_set: list[str] | None = None
    forbidden_tools: list[str] = Field(default_factory=list)
    max_steps: int | None = Field(default=None, ge=1)
    ok: bool = True


class EvalCase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200)
    task: str = Field(min_length=1)
    category: str = "uncategorised"
    expect: Expectations = Field(default_factory=Expectations)
    # Where the case came from, e.g. the stored run a dataset from traces made it of (trace_id, project,
    # agent, version, expected_from); never checked, kept so a result can be traced back to its run.
    source: dict[str, Any] | None = None


class DatasetError(ValueError):
    """The dataset cannot be used; `problems` lists every bad line."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        super().__init__(f"{path}: " + "; ".join(shown))
        self.problems = problems


def load_dataset(path: str | Path) -> list[EvalCase]:
    """Every case of a JSONL file (blank lines and `#` comments skipped), or DatasetError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(path, [f"cannot read it ({exc.strerror or exc})"]) from exc
    cases: list[EvalCase] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            case = EvalCase.model_validate(json.loads(line))
        except ValueError as exc:  # JSON errors and pydantic's ValidationError
            detail = (
                "; ".join(f"{'.'.join(map(str, e['loc'])) or 'case'}: {e['msg']}" for e in exc.errors()[:3])
                if isinstance(exc, ValidationError) else f"not JSON ({exc})"
            )
            problems.append(f"line {number}: {detail}")
            continue
        if case.id in seen:
            problems.append(f"line {number}: duplicate id {case.id!r} (first on line {seen[case.id]})")
            continue
        seen[case.id] = number
        cases.append(case)
    if not cases and not problems:
        problems.append("no cases")
    if problems:
        raise DatasetError(path, problems)
    return cases
