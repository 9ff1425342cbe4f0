"""The granularity router: how much of the plan to throw away for a given failure.

Replanning too little repeats the failure; replanning too much throws away paid-for work and
invites oscillation. So the rules are explicit (a table the caller can replace or override per
signal) and monotone: when the same failure comes back, the answer only gets heavier.

  none   : environmental errors stay in retry/fallback (the step is simply run again)
  patch  : the failed step and its direct successors
  tail   : the failed step and everything not yet done
  global : the goal changed, or the premise of the whole plan fell
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from kernel.plan.signals import FailureKind, FailureSignal


class Granularity(StrEnum):
    NONE = "none"
    PATCH = "patch"
    TAIL = "tail"
    GLOBAL = "global"


ORDER: tuple[Granularity, ...] = (Granularity.NONE, Granularity.PATCH, Granularity.TAIL, Granularity.GLOBAL)


def heavier(a: Granularity, b: Granularity) -> Granularity:
    return a if ORDER.index(a) >= ORDER.index(b) else b


def next_level(g: Granularity) -> Granularity:
    return ORDER[min(ORDER.index(g) + 1, len(ORDER) - 1)]


def default_rules() -> dict[FailureKind, Granularity]:
    return {
        FailureKind.ENVIRONMENTAL: Granularity.NONE,
        # The step's own approach was wrong: repair it and whatever consumes it directly.
        FailureKind.SEMANTIC: Granularity.PATCH,
        FailureKind.PERMISSION: Granularity.PATCH,
        FailureKind.MISSING_VARIABLE: Granularity.PATCH,
        # The data did not look as assumed: everything downstream was planned on that assumption.
        FailureKind.ASSUMPTION: Granularity.TAIL,
        FailureKind.GOAL_CHANGE: Granularity.GLOBAL,
    }


# An override sees the signal and the rule's proposal; returning None keeps the proposal.
Override = Callable[[FailureSignal, Granularity], Granularity | None]


@dataclass
class RouterRules:
    """What the caller may change: the table, the premise rule, a per-signal override."""

    by_kind: dict[FailureKind, Granularity] = field(default_factory=default_rules)
    premise: Granularity = Granularity.GLOBAL
    override: Override | None = None


@dataclass
class RouteDecision:
    granularity: Granularity
    rule: Granularity  # what the rules alone said
    escalated: bool  # raised because the same failure was routed before


class Router:
    """Routes failures of one run; remembers the last granularity per failure key."""

    def __init__(self, rules: RouterRules | None = None) -> None:
        self.rules = rules or RouterRules()
        self._last: dict[tuple[str, str], Granularity] = {}

    def route(self, signal: FailureSignal) -> RouteDecision:
        rule = self.rules.by_kind.get(signal.kind, Granularity.PATCH)
        if signal.premise or signal.kind == FailureKind.GOAL_CHANGE:
            rule = heavier(rule, self.rules.premise if signal.premise else Granularity.GLOBAL)
        if self.rules.override is not None:
            chosen = self.rules.override(signal, rule)
            if chosen is not None:
                rule = Granularity(chosen)
        granularity, escalated = rule, False
        last = self._last.get(signal.key)
        if last is not None:
            floor = next_level(last)
            if ORDER.index(floor) > ORDER.index(granularity):
                granularity, escalated = floor, True
        self._last[signal.key] = granularity
        return RouteDecision(granularity=granularity, rule=rule, escalated=escalated)

    def reset(self) -> int:
        """Forget every failure's last granularity (a goal change: the escalation earned by failures
        toward the old goal must not make the new goal's first repair heavier). How many were forgotten."""
        forgotten = len(self._last)
        self._last.clear()
        return forgotten
