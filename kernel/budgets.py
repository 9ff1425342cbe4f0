"""Hard run limits and the tracker that enforces them.

A budget is checked before every LLM call (the loop asks `BudgetTracker.check()`), and the
wall-clock part is also enforced *during* a call: the loop wraps each LLM call and tool dispatch
in a timeout of `remaining_seconds()`. The tracker keeps every number the `budget_check` span
needs (used, limit, which limit is exhausted, headroom) so tracing can be added without touching
the arithmetic.

"max" means "at most this many happen": `max_steps=3` allows three steps, `max_consecutive_errors=2`
lets two consecutive tool errors happen and then ends the run. Token and cost limits are checked
before a call, so one call can overshoot them by at most its own size; the loop also caps the
call's `max_tokens` by the remaining output budget to keep that overshoot small.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from pydantic import BaseModel, ConfigDict, Field

from kernel.types import Usage
from tracer.conventions import StopReason


class Budget(BaseModel):
    """The hard limits of one run. `None` means unlimited."""

    model_config = ConfigDict(frozen=True)

    max_steps: int | None = Field(default=20, ge=1)
    max_input_tokens: int | None = Field(default=None, ge=0)
    max_output_tokens: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)
    max_seconds: float | None = Field(default=None, gt=0)
    max_consecutive_errors: int | None = Field(default=3, ge=1)
    # How many unparsable model outputs in a row are tolerated before `unparsable_exhausted`.
    max_consecutive_unparsable: int | None = Field(default=3, ge=1)
    # Not a stop: the prompt size past which the loop compacts the context before an LLM call
    # (kernel/context.py). Every step re-sends the whole prompt, so a run's input cost grows with
    # the square of its length; 32k tokens keeps a long run's calls cheap and fits every current
    # model's window, while leaving room for a few full observations (2,000 tokens each by default).
    # None: only the agent's relative watermark (compaction_watermark x context_limit_tokens) applies.
    context_watermark_tokens: int | None = Field(default=32_000, ge=1)


class BudgetLine(BaseModel):
    """One limited quantity. `remaining_fraction` is None when there is no limit."""

    name: str
    used: float
    limit: float | None

    @property
    def remaining_fraction(self) -> float | None:
        if self.limit is None:
            return None
        if self.limit <= 0:
            return 0.0
        return min(1.0, max(0.0, (self.limit - self.used) / self.limit))

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.used >= self.limit


class BudgetCheck(BaseModel):
    """A snapshot taken before an LLM call: what the `budget_check` span records.

    `exhausted` is the stop reason to end the run with (None while everything is within limits);
    `exhausted_limit` names the quantity (e.g. `output_tokens`, since both token limits share the
    `token_budget` stop reason). `headroom` is the smallest remaining fraction over all limited
    quantities, 1.0 when nothing is limited.
    """

    steps: BudgetLine
    input_tokens: BudgetLine
    output_tokens: BudgetLine
    cost_usd: BudgetLine
    seconds: BudgetLine
    consecutive_errors: BudgetLine
    exhausted: StopReason | None = None
    exhausted_limit: str | None = None
    headroom: float = 1.0

    def lines(self) -> Iterator[BudgetLine]:
        yield from (self.steps, self.input_tokens, self.output_tokens, self.cost_usd, self.seconds)

    def line(self, name: str) -> BudgetLine:
        """The line for one of `tracer.conventions.BUDGET_NAMES` (or output_tokens)."""
        return getattr(self, name)


# Order matters: when several limits are hit at once, the first one is reported.
_STOP_FOR_LINE: tuple[tuple[str, StopReason], ...] = (
    ("seconds", StopReason.TIMEOUT),
    ("cost_usd", StopReason.COST_BUDGET),
    ("input_tokens", StopReason.TOKEN_BUDGET),
    ("output_tokens", StopReason.TOKEN_BUDGET),
    ("consecutive_errors", StopReason.TOOL_ERROR_EXHAUSTED),
    ("steps", StopReason.MAX_STEPS),
)


class BudgetTracker:
    """Mutable per-run accounting against one `Budget`. Not shared between runs."""

    def __init__(self, budget: Budget, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self._clock = clock
        self._started = clock()
        self.steps = 0
        self.usage = Usage()
        self.cost_usd = 0.0
        self.consecutive_errors = 0
        self.consecutive_unparsable = 0

    # ---- accounting -------------------------------------------------------------------------

    def elapsed(self) -> float:
        return self._clock() - self._started

    def remaining_seconds(self) -> float | None:
        """Time left for the run; the loop uses it as the timeout of a hanging call."""
        if self.budget.max_seconds is None:
            return None
        return max(0.0, self.budget.max_seconds - self.elapsed())

    def remaining_output_tokens(self) -> int | None:
        if self.budget.max_output_tokens is None:
            return None
        return max(0, self.budget.max_output_tokens - self.usage.output_tokens)

    def add_step(self) -> None:
        self.steps += 1

    def add_usage(self, usage: Usage) -> None:
        self.usage = self.usage + usage

    def add_cost(self, cost_usd: float) -> None:
        self.cost_usd += cost_usd

    def record_tool_outcome(self, is_error: bool) -> None:
        """A tool error extends the streak; any successful observation ends it."""
        self.consecutive_errors = self.consecutive_errors + 1 if is_error else 0

    def record_parse(self, unparsable: bool) -> None:
        self.consecutive_unparsable = self.consecutive_unparsable + 1 if unparsable else 0

    def unparsable_exhausted(self) -> bool:
        limit = self.budget.max_consecutive_unparsable
        return limit is not None and self.consecutive_unparsable >= limit

    # ---- the check --------------------------------------------------------------------------

    def check(self) -> BudgetCheck:
        """Snapshot every limit and say which (if any) ends the run now."""
        b = self.budget
        lines = {
            "steps": BudgetLine(name="steps", used=self.steps, limit=b.max_steps),
            "input_tokens": BudgetLine(
                name="input_tokens", used=self.usage.input_tokens, limit=b.max_input_tokens
            ),
            "output_tokens": BudgetLine(
                name="output_tokens", used=self.usage.output_tokens, limit=b.max_output_tokens
            ),
            "cost_usd": BudgetLine(name="cost_usd", used=self.cost_usd, limit=b.max_cost_usd),
            "seconds": BudgetLine(name="seconds", used=self.elapsed(), limit=b.max_seconds),
            "consecutive_errors": BudgetLine(
                name="consecutive_errors", used=self.consecutive_errors, limit=b.max_consecutive_errors
            ),
        }
        exhausted: StopReason | None = None
        exhausted_limit: str | None = None
        for name, reason in _STOP_FOR_LINE:
            if lines[name].exhausted:
                exhausted, exhausted_limit = reason, name
                break
        fractions = [
            f
            for name in ("steps", "input_tokens", "output_tokens", "cost_usd", "seconds")
            if (f := lines[name].remaining_fraction) is not None
        ]
        return BudgetCheck(
            **lines,
            exhausted=exhausted,
            exhausted_limit=exhausted_limit,
            headroom=min(fractions, default=1.0),
        )
