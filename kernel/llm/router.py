"""Pick a model per call by purpose: cheap models for summaries, strong ones for planning.

Every kernel call site says what its call is for (`tracer.conventions.LLMPurpose`: step, plan,
replan, summary, judge) and `kernel.telemetry.complete` hands that purpose to a Router. Rules are
plain predicates so callers can route on anything they can see (purpose, length of the
conversation, a flag in the last message) without a rules language to learn; `Route` adds a name
(what the chat span records as `steplens.llm.route.rule`) and a purpose filter for the common case.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kernel.llm.base import LLM, describe
from kernel.llm.scope import call_labels, current_call_labels
from kernel.types import LLMResponse, Message
from tracer.conventions import ROUTE_DEFAULT, LLMPurpose

log = logging.getLogger(__name__)

Predicate = Callable[[str, list[Message]], bool]


@dataclass(frozen=True)
class Route:
    """One routing rule: matches when the call's purpose is in `purposes` (any purpose when
    empty) and `when` (if given) holds. `name` is what traces show; unnamed rules are `rule<i>`."""

    llm: LLM
    purposes: frozenset[str] = frozenset()
    when: Predicate | None = None
    name: str | None = None

    @classmethod
    def for_purposes(cls, llm: LLM, *purposes: str, name: str | None = None) -> Route:
        """The usual rule: these purposes go to `llm` (named after them unless told)."""
        return cls(llm, frozenset(str(p) for p in purposes), None, name or "+".join(str(p) for p in purposes))

    def matches(self, purpose: str, messages: list[Message]) -> bool:
        if self.purposes and purpose not in self.purposes:
            return False
        return self.when is None or bool(self.when(purpose, messages))


RuleSpec = Route | tuple[Predicate, LLM] | tuple[Predicate, LLM, str]


def _as_route(rule: RuleSpec) -> Route:
    if isinstance(rule, Route):
        return rule
    if len(rule) == 3:
        predicate, llm, name = rule  # type: ignore[misc]
        return Route(llm, when=predicate, name=name)
    predicate, llm = rule  # type: ignore[misc]
    return Route(llm, when=predicate)


class Router:
    """Implements `LLM`; the first rule that matches picks the LLM, else `default`.

    A predicate that raises is skipped (and logged with its traceback): a bad routing rule should
    degrade to the default model, not stop the agent. Rules are `Route`s or, as before,
    `(predicate, llm)` / `(predicate, llm, name)` tuples.
    """

    # complete() traces the selected LLM itself (see kernel.telemetry.complete).
    emits_chat_spans = True
    # kernel.telemetry.complete passes the call's purpose (plain adapters never get it).
    routes_by_purpose = True

    def __init__(self, default: LLM, rules: Iterable[RuleSpec] | None = None) -> None:
        self.default = default
        self.routes: list[Route] = [_as_route(r) for r in rules or ()]
        self.model, self.provider = describe(default)

    @property
    def rules(self) -> list[tuple[Predicate, LLM]]:
        """The rules as (predicate, llm) pairs (the shape this class first took)."""
        return [(route.matches, route.llm) for route in self.routes]

    def choose(self, purpose: str, messages: list[Message]) -> tuple[LLM, str]:
        """(the LLM, the name of the rule that picked it, `default` when none matched)."""
        for i, route in enumerate(self.routes):
            try:
                if route.matches(purpose, messages):
                    return route.llm, route.name or f"rule{i}"
            except Exception:
                log.exception("router rule %d raised for purpose %r; skipping it", i, purpose)
        return self.default, ROUTE_DEFAULT

    def select(self, purpose: str, messages: list[Message]) -> LLM:
        return self.choose(purpose, messages)[0]

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        purpose: str | None = None,
    ) -> LLMResponse:
        """`purpose` None: the purpose of the kernel call in progress (it reaches a Router inside
        any wrapper that forwards `complete` without it), else `step`."""
        from kernel import telemetry  # kernel.telemetry imports kernel.llm: resolve at call time

        purpose = str(purpose or current_call_labels().purpose or LLMPurpose.STEP)
        llm, rule = self.choose(purpose, messages)
        # The selected LLM's own chat span(s), or one around it when it is a plain adapter; each
        # records the purpose, this rule and the model it picked.
        with call_labels(route_rule=rule, route_model=describe(llm)[0]):
            return await telemetry.complete(
                llm, messages, tools, temperature=temperature, max_tokens=max_tokens, purpose=purpose
            )
