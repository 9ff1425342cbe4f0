"""Compare two evaluation runs case by case: what regressed, what improved, what moved.

A regression is a case that passed in A and fails in B; an improvement the reverse. Cases that
pass (or fail) in both are listed when their step count changed, because "still passes, one
step longer" is exactly how a vaguer tool description shows up before it breaks anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernel.eval.results import EvalRun
from kernel.eval.scoring import CaseResult


@dataclass(frozen=True)
class CaseChange:
    case_id: str
    category: str
    kind: str  # regression | improvement | steps
    a: CaseResult
    b: CaseResult

    @property
    def why(self) -> str:
        if self.kind == "regression":
            return "; ".join(self.b.failures)
        if self.kind == "improvement":
            return "was: " + "; ".join(self.a.failures)
        return f"steps {self.a.steps} -> {self.b.steps}"


@dataclass
class Comparison:
    a: EvalRun
    b: EvalRun
    regressions: list[CaseChange] = field(default_factory=list)
    improvements: list[CaseChange] = field(default_factory=list)
    step_changes: list[CaseChange] = field(default_factory=list)
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)

    @property
    def same_dataset(self) -> bool:
        return self.a.dataset_sha256 == self.b.dataset_sha256


def compare(a: EvalRun, b: EvalRun) -> Comparison:
    out = Comparison(a, b)
    in_a = {c.case_id: c for c in a.cases}
    in_b = {c.case_id: c for c in b.cases}
    out.only_in_a = [x for x in in_a if x not in in_b]
    out.only_in_b = [x for x in in_b if x not in in_a]
    for case_id, ca in in_a.items():
        cb = in_b.get(case_id)
        if cb is None:
            continue
        if ca.passed and not cb.passed:
            out.regressions.append(CaseChange(case_id, cb.category, "regression", ca, cb))
        elif cb.passed and not ca.passed:
            out.improvements.append(CaseChange(case_id, cb.category, "improvement", ca, cb))
        elif ca.steps != cb.steps:
            out.step_changes.append(CaseChange(case_id, cb.category, "steps", ca, cb))
    return out
