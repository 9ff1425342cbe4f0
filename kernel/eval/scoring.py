"""Score one run against its case's expectations: pass/fail plus the reason for every failed check.

Why reasons and not just a boolean: `eval compare` shows *what* regressed in a case (took 5 steps
where 4 were allowed, called a forbidden tool), which is what a reviewer acts on.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from kernel.eval.dataset import EvalCase
from kernel.types import RunResult
from tracer.conventions import StopReason, ToolDecision

# A run that ran out of time or steps without answering: the harness's "timeout".
LIMIT_STOPS = frozenset({StopReason.TIMEOUT, StopReason.MAX_STEPS})


class CaseResult(BaseModel):
    """One case's run and verdict (what the results JSON holds per case)."""

    case_id: str
    category: str
    passed: bool
    failures: list[str] = Field(default_factory=list)
    ok: bool
    stop_reason: str
    timed_out: bool
    steps: int
    tools_called: list[str] = Field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0
    trace_id: str | None = None
    answer: str | None = None
    error: str | None = None


def _is_subsequence(needle: list[str], hay: list[str]) -> bool:
    it = iter(hay)
    return all(any(x == y for y in it) for x in needle)


def score(case: EvalCase, result: RunResult) -> CaseResult:
    expect = case.expect
    # Paired by call id: calls the loop guard refused have no observation (a guard event instead).
    calls = [(o.tool_name, o) for s in result.steps for o in s.observations]
    called = [s_call.name for s in result.steps for s_call in s.calls]
    succeeded = [name for name, obs in calls if not obs.is_error and obs.decision == ToolDecision.EXECUTED]
    failures: list[str] = []
    if result.ok != expect.ok:
        failures.append(f"run ok={result.ok} (stop reason {result.stop_reason.value}), expected ok={expect.ok}")
    answer = result.answer or ""
    missing = [s for s in expect.answer_contains if s.lower() not in answer.lower()]
    if missing:
        failures.append(f"answer lacks {missing}" if result.answer else "no answer")
    if expect.tools_sequence is not None and not _is_subsequence(expect.tools_sequence, succeeded):
        failures.append(f"tools did not succeed in order {expect.tools_sequence} (succeeded: {succeeded})")
    if expect.tools_set is not None:
        absent = [t for t in expect.tools_set if t not in called]
        if absent:
            failures.append(f"never called {absent}")
    forbidden = sorted({t for t in called if t in expect.forbidden_tools})
    if forbidden:
        failures.append(f"called forbidden {forbidden}")
    if expect.max_steps is not None and len(result.steps) > expect.max_steps:
        failures.append(f"took {len(result.steps)} steps, at most {expect.max_steps} allowed")
    return CaseResult(
        case_id=case.id,
        category=case.category,
        passed=not failures,
        failures=failures,
        ok=result.ok,
        stop_reason=result.stop_reason.value,
        timed_out=result.stop_reason in LIMIT_STOPS,
        steps=len(result.steps),
        tools_called=called,
        input_tokens=result.usage.input_tokens,
        output_tokens=result.usage.output_tokens,
        cost_usd=result.cost_usd,
        duration_s=result.duration_s,
        trace_id=result.trace_id,
        answer=result.answer,
        error=result.error,
    )
