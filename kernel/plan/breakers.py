"""Breakers and gates: the reasons replanning stops.

Replanning that does not converge is the expensive failure mode of plan-and-execute: every
round costs an LLM call and usually re-runs tools. Each guard here is one explicit rule with its
own verdict (`steplens.replan.verdict`), so a trace says exactly which one ended the run.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from kernel.plan.signals import FailureSignal
from tracer.conventions import ReplanVerdict


@dataclass(frozen=True)
class BreakerConfig:
    """Limits. `max_replans` None means half the first plan's step count (at least 1).
    `max_replan_tokens` caps the estimated size (prompt + reserved reply) of one replan call."""

    max_same_failure: int = 3
    max_replans: int | None = None
    max_replan_tokens: int | None = None
    replan_reply_tokens: int = 800


@dataclass
class Breakers:
    config: BreakerConfig
    max_replans: int = 1
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)
    replans: int = 0
    fingerprints: dict[str, int] = field(default_factory=dict)  # fingerprint -> first version

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

    def before_replan(self, signal: FailureSignal | None, estimated_tokens: int,
                      remaining_tokens: int | None) -> tuple[ReplanVerdict, str]:
        """The verdict for one more replan call, checked before paying for it."""
        if signal is not None and self.step_tripped(signal):
            return ReplanVerdict.STEP_BREAKER, (
                f"{signal.origin} failed with {signal.kind.value} {self.failures[signal.key]} times "
                f"(limit {self.config.max_same_failure})"
            )
        if self.replans >= self.max_replans:
            return ReplanVerdict.TOTAL_BREAKER, f"{self.replans} replans already (limit {self.max_replans})"
        limits = [x for x in (self.config.max_replan_tokens, remaining_tokens) if x is not None]
        if limits and estimated_tokens > min(limits):
            return ReplanVerdict.TOKEN_GATE, (
                f"the replan call would need ~{estimated_tokens} tokens; {min(limits)} allowed"
            )
        return ReplanVerdict.ADMITTED, ""

    def remember(self, fingerprint: str, version: int) -> None:
        self.fingerprints.setdefault(fingerprint, version)

    def seen(self, fingerprint: str) -> int | None:
        """The version that already had this action sequence, if any (the oscillation guard)."""
        return self.fingerprints.get(fingerprint)
