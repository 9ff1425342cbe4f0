"""Breakers and gates: the reasons replanning stops.

Replanning that does not converge is the expensive failure mode of plan-and-execute: every
round costs an LLM call and usually re-runs tools. Each guard here is one explicit rule with its
own verdict (`steplens.replan.verdict`), so a trace says exactly which one ended the run; the
replan span also carries the refusal's reason (`steplens.replan.refusal` and a
`steplens.replan_guard` event). docs/replanning.md lists every rule with its default.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from kernel.plan.model import Plan
from kernel.plan.signals import FailureKind, FailureSignal
from tracer.conventions import ReplanVerdict


@dataclass(frozen=True)
class BreakerConfig:
    """Limits.

    max_same_failure: the same step lineage failing the same way more often trips the step breaker.
    max_replans: replans per run (None: half the first plan's step count, at least 1).
    max_replan_tokens: the estimated size (prompt + reserved reply) of one replan call.
    replan_reply_tokens: what the estimate reserves for the replanner's reply.
    replan_budget_tokens: the run's cumulative replanning budget, tokens (input + output) of every
      replanner call so far plus the next one's estimate (None: no absolute budget).
    replan_budget_share: the same budget as a share of the run's `Budget.max_input_tokens`, when the
      run has one (None: off); the smaller of the two applies.
    min_tool_calls: tool calls (new evidence) the run must have made since the last plan was adopted
      before a failure may be replanned; goal changes are exempt (0: off).
    normalise_literals: the oscillation guard also compares plans with literal arguments normalised
      (numbers, quoted strings, ids, single-token values), so "the same plan with another number" is seen.
    max_literal_variants: versions that differ from an earlier one only in literals that are still
      admitted (the first argument fix is what a patch replan is for; 0: refuse the first).
    """

    max_same_failure: int = 3
    max_replans: int | None = None
    max_replan_tokens: int | None = None
    replan_reply_tokens: int = 800
    replan_budget_tokens: int | None = None
    replan_budget_share: float | None = 0.5
    min_tool_calls: int = 1
    normalise_literals: bool = True
    max_literal_variants: int = 1

    def __post_init__(self) -> None:
        if self.min_tool_calls < 0 or self.max_literal_variants < 0:
            raise ValueError("min_tool_calls and max_literal_variants must be >= 0")
        if self.replan_budget_share is not None and not 0 < self.replan_budget_share <= 1:
            raise ValueError("replan_budget_share must be in (0, 1] or None")
        if self.replan_budget_tokens is not None and self.replan_budget_tokens < 1:
            raise ValueError("replan_budget_tokens must be >= 1 or None")


@dataclass
class Breakers:
    config: BreakerConfig
    max_replans: int = 1
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)
    replans: int = 0
    tokens_used: int = 0  # input + output tokens of the replanner's calls so far
    fingerprints: dict[str, int] = field(default_factory=dict)  # fingerprint -> first version
    shapes: dict[str, list[int]] = field(default_factory=dict)  # literal-normalised -> versions

    @classmethod
    def for_plan(cls, config: BreakerConfig, first_plan_steps: int) -> Breakers:
        limit = config.max_replans
        if limit is None:
            limit = max(1, math.floor(first_plan_steps / 2))
        return cls(config=config, max_replans=limit)

    def note_failure(self, signal: FailureSignal) -> int:
        """Count one occurrence of this failure; the count after it."""
        self.failures[signal.key] += 1
        return self.failures[signal.key]

    def step_tripped(self, signal: FailureSignal) -> bool:
        """The same step (lineage) failed with the same kind more than N times."""
        return self.failures[signal.key] > self.config.max_same_failure

    def budget_tokens(self, run_input_limit: int | None) -> int | None:
        """The cumulative replanning budget for a run with this input-token limit (None: none)."""
        limits = [self.config.replan_budget_tokens]
        if self.config.replan_budget_share is not None and run_input_limit is not None:
            limits.append(math.floor(run_input_limit * self.config.replan_budget_share))
        present = [x for x in limits if x is not None]
        return min(present) if present else None

    def before_replan(self, signal: FailureSignal | None, estimated_tokens: int, remaining_tokens: int | None,
                      *, tool_calls: int | None = None, run_input_limit: int | None = None
                      ) -> tuple[ReplanVerdict, str]:
        """The verdict for one more replan call, checked before paying for it. `tool_calls`: tool
        calls since the last plan (None: not gated)."""
        if signal is not None and self.step_tripped(signal):
            return ReplanVerdict.STEP_BREAKER, (
                f"{signal.origin} failed with {signal.kind.value} {self.failures[signal.key]} times "
                f"(limit {self.config.max_same_failure})"
            )
        if self.replans >= self.max_replans:
            return ReplanVerdict.TOTAL_BREAKER, f"{self.replans} replans already (limit {self.max_replans})"
        goal_change = signal is not None and signal.kind == FailureKind.GOAL_CHANGE
        if tool_calls is not None and not goal_change and tool_calls < self.config.min_tool_calls:
            return ReplanVerdict.TOOL_CALL_GATE, (
                f"{tool_calls} tool call(s) since the last plan; a replan needs {self.config.min_tool_calls}"
            )
        limits = [x for x in (self.config.max_replan_tokens, remaining_tokens) if x is not None]
        if limits and estimated_tokens > min(limits):
            return ReplanVerdict.TOKEN_GATE, (
                f"the replan call would need ~{estimated_tokens} tokens; {min(limits)} allowed"
            )
        budget = self.budget_tokens(run_input_limit)
        if budget is not None and self.tokens_used + estimated_tokens > budget:
            return ReplanVerdict.REPLAN_BUDGET, (
                f"replanning used {self.tokens_used} tokens; ~{estimated_tokens} more would pass the run's "
                f"replanning budget of {budget}"
            )
        return ReplanVerdict.ADMITTED, ""

    def spent(self, input_tokens: int, output_tokens: int) -> None:
        """One replanner call's usage, counted toward the cumulative budget."""
        self.tokens_used += max(0, int(input_tokens)) + max(0, int(output_tokens))

    def remember(self, plan: Plan) -> None:
        """An adopted version: its exact and literal-normalised signatures."""
        self.fingerprints.setdefault(plan.fingerprint(), plan.version)
        self.shapes.setdefault(plan.shape_fingerprint(), []).append(plan.version)

    def seen(self, fingerprint: str) -> int | None:
        """The version that already had this exact action sequence, if any."""
        return self.fingerprints.get(fingerprint)

    def oscillation(self, plan: Plan) -> tuple[int, str] | None:
        """(the earlier version, why) when `plan` repeats one: the same action sequence, or (with
        `normalise_literals`) the same plan with only literals changed once too often."""
        exact = self.seen(plan.fingerprint())
        if exact is not None:
            return exact, f"the new plan repeats the action sequence of version {exact}"
        if not self.config.normalise_literals:
            return None
        earlier = self.shapes.get(plan.shape_fingerprint(), [])
        if len(earlier) > self.config.max_literal_variants:
            allowed = self.config.max_literal_variants
            return earlier[0], (
                f"the new plan is version {earlier[0]} with only literal arguments changed "
                f"(versions {', '.join(map(str, earlier))} already have that shape; "
                f"{allowed} literal variant(s) allowed)"
            )
        return None
