"""The conversation the model sees, and how it is kept under the context budget.

The loop appends to one `Context` per run; `messages` is what goes to the LLM. Keeping this in one
place means the two modes differ only here: in text mode tools are described in the system prompt
and observations come back as user messages; in function-calling mode tools go in the OpenAI
`tools` parameter and observations are `tool` messages answering each `tool_call_id`.

Compaction is why this is more than a list: long agent runs fill the window with old material the
model no longer needs verbatim, and every step re-sends all of it (cost and latency grow with the
prompt, and models attend worst to the middle of a long one). Before each LLM call, when the
estimated prompt passes the threshold (`ContextPolicy.threshold_tokens`: the smaller of
`watermark * context_limit_tokens` and the run budget's `context_watermark_tokens`), the cheapest
losses go first, oldest first within each kind, stopping as soon as the prompt is under it:

1. old *empty rounds* are dropped whole: rounds with no executed tool call and so no new
   information (an unparsable reply and its correction, a refused finish, calls the loop guard
   refused). Nothing the model learnt is lost; in function-calling mode the refused calls leave
   together with their answers, so every remaining `tool_call_id` is still answered.
2. old long *observations* are replaced by a short marker, or by a summary when a summariser is
   given (the model can call the tool again).
3. old *thoughts* are replaced by a marker; the action lines stay, so the model still sees what it
   did and the observation it got.

The system prompt, the task and the latest `keep_last_rounds` rounds are never touched: the first
two define the job, the last are what the model must react to now.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from kernel.types import Message, ToolCall
from tracer.conventions import CompactedKind

Mode = Literal["text", "function_calling"]
Summariser = Callable[[str], "str | Awaitable[str]"]
Estimator = Callable[[list[Message]], int]


@dataclass(frozen=True)
class ContextPolicy:
    """When and how to compact. `min_elide_tokens` spares short observations (eliding them saves
    little and loses facts); `min_thought_tokens` does the same for thoughts. `budget_tokens` is
    the run budget's absolute watermark (None: only the relative one applies)."""

    context_limit_tokens: int = 128_000
    watermark: float = 0.8
    min_elide_tokens: int = 200
    summariser: Summariser | None = None
    budget_tokens: int | None = None
    min_thought_tokens: int = 20
    keep_last_rounds: int = 1

    @property
    def threshold_tokens(self) -> int:
        relative = int(self.context_limit_tokens * self.watermark)
        return relative if self.budget_tokens is None else min(relative, self.budget_tokens)


class Compaction(BaseModel):
    """One item shortened or dropped; kept so the run (and its trace) can show what was lost.

    `message_index` is the message's position when it was compacted (a dropped round shifts the
    later ones). For a dropped empty round, tokens_after is 0 and it covers the whole round."""

    step: int
    message_index: int
    tokens_before: int
    tokens_after: int
    summarised: bool
    error: str | None = None  # the summariser's failure, when it fell back to the marker
    kind: CompactedKind = CompactedKind.OBSERVATION


@dataclass
class CompactionReport:
    """One `compact()` that was needed: the whole prompt before/after and what was done."""

    threshold_tokens: int
    tokens_before: int
    tokens_after: int
    done: list[Compaction]

    def counts(self) -> dict[str, int]:
        """How many items of each kind (every kind, zeros included)."""
        out = {kind.value: 0 for kind in CompactedKind}
        for item in self.done:
            out[item.kind.value] += 1
        return out

    @property
    def summarised(self) -> int:
        return sum(1 for item in self.done if item.summarised)


EntryKind = Literal["head", "assistant", "observation", "feedback"]


@dataclass
class _Entry:
    """What one message is to compaction (kept parallel to `Context.messages`)."""

    kind: EntryKind
    step: int
    prefix: str = ""  # observations: kept in front of the replacement so the model sees what it was
    thought: str | None = None  # assistant turns: the reasoning text inside the content
    compacted: bool = False


THOUGHT_MARKER = "[thought elided to save context]"


def _default_estimator(messages: list[Message]) -> int:
    from kernel.tokens import estimate_messages_tokens

    return estimate_messages_tokens(messages)


def elision_marker(step: int, tokens: int) -> str:
    return (
        f"[observation from step {step} elided to save context (~{tokens} tokens); "
        "call the tool again if you need it]"
    )


@dataclass
class Context:
    """The growing prompt of one run."""

    system_prompt: str
    task: str
    mode: Mode = "text"
    tool_prompt: str = ""  # text mode: tool descriptions + expected format, appended to the system
    tool_schemas: list[dict] | None = None  # function-calling mode: the OpenAI `tools` list
    policy: ContextPolicy = field(default_factory=ContextPolicy)
    estimate: Estimator = _default_estimator
    messages: list[Message] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    _entries: list[_Entry] = field(default_factory=list)
    _empty_rounds: set[int] = field(default_factory=set)
    _round: int = 0

    def __post_init__(self) -> None:
        if not self.messages:
            system = self.system_prompt
            if self.mode == "text" and self.tool_prompt:
                system = f"{system}\n\n{self.tool_prompt}" if system else self.tool_prompt
            self.messages = [Message(role="system", content=system), Message(role="user", content=self.task)]
        self._entries = [_Entry("head", 0) for _ in self.messages]

    @property
    def tools(self) -> list[dict] | None:
        """What to pass as `tools` to the LLM: only in function-calling mode."""
        return self.tool_schemas if self.mode == "function_calling" else None

    def prompt(self) -> list[Message]:
        """A copy of the messages, so an LLM adapter mutating them cannot corrupt the run."""
        return [m.model_copy(deep=True) for m in self.messages]

    def prompt_tokens(self) -> int:
        return self.estimate(self.messages)

    # ---- appending ----------------------------------------------------------------------------

    def _append(self, message: Message, entry: _Entry) -> None:
        self.messages.append(message)
        self._entries.append(entry)

    def add_assistant(
        self, text: str | None, calls: list[ToolCall] | None = None, *, step: int | None = None,
        thought: str | None = None,
    ) -> None:
        """The model's turn, which opens round `step` (default: the next one). In text mode the
        raw text carries the calls; in function-calling mode the calls ride on the message so the
        following tool messages can answer them. `thought` is the reasoning inside `text`, the
        part compaction may elide later."""
        self._round = step if step is not None else self._round + 1
        entry = _Entry("assistant", self._round, thought=thought.strip() if thought and thought.strip() else None)
        if self.mode == "function_calling":
            self._append(Message(role="assistant", content=text, tool_calls=list(calls or [])), entry)
        else:
            self._append(Message(role="assistant", content=text or ""), entry)

    def add_observations(self, step: int, results: list[tuple[ToolCall, str]]) -> None:
        """What the tools returned (already truncated), as the model will see it."""
        if not results:
            return
        if self.mode == "function_calling":
            for call, text in results:
                self._append(
                    Message(role="tool", content=text, tool_call_id=call.id, name=call.name),
                    _Entry("observation", step),
                )
            return
        if len(results) == 1:
            body = f"Observation: {results[0][1]}"
        else:
            body = "\n\n".join(f"Observation ({call.name}, id {call.id}): {text}" for call, text in results)
        self._append(Message(role="user", content=body), _Entry("observation", step, prefix="Observation: "))

    def add_feedback(self, text: str) -> None:
        """Kernel feedback that answers no tool call (format errors, refused finishes)."""
        self._append(Message(role="user", content=text), _Entry("feedback", self._round))

    def mark_empty_round(self, step: int) -> None:
        """Round `step` executed no tool and brought no new information (a format error, a
        refused finish, only refused calls): once old, compaction may drop it whole."""
        self._empty_rounds.add(step)

    # ---- compaction ---------------------------------------------------------------------------

    def over_threshold(self) -> bool:
        """Whether the next LLM call needs a compaction first (what opens its span)."""
        return self.prompt_tokens() > self.policy.threshold_tokens

    async def compact(self) -> list[Compaction]:
        """Shorten or drop old material until the prompt is under the threshold (see the module
        docstring for the order). Returns what was done this time (empty when nothing was
        needed). Never raises on a summariser failure: the marker is used and the error recorded.
        """
        report = await self.compact_report()
        return report.done if report is not None else []

    async def compact_report(self) -> CompactionReport | None:
        """`compact()` with the whole prompt's tokens before and after; None when under it."""
        threshold = self.policy.threshold_tokens
        total = self.prompt_tokens()
        if total <= threshold:
            return None
        report = CompactionReport(threshold, total, total, [])
        rounds = sorted({e.step for e in self._entries if e.kind != "head"})
        kept = set(rounds[-max(1, self.policy.keep_last_rounds):]) if rounds else set()
        for phase in (self._drop_empty_rounds, self._elide_observations, self._elide_thoughts):
            if total <= threshold:
                break
            total = await phase(kept, total, threshold, report.done)
        report.tokens_after = self.prompt_tokens()
        self.compactions.extend(report.done)
        return report

    async def _drop_empty_rounds(self, kept: set[int], total: int, threshold: int, done: list[Compaction]) -> int:
        for step in sorted(self._empty_rounds - kept):
            if total <= threshold:
                break
            where = [i for i, e in enumerate(self._entries) if e.kind != "head" and e.step == step]
            if not where:
                continue
            before = self.estimate([self.messages[i] for i in where])
            for i in reversed(where):
                del self.messages[i]
                del self._entries[i]
            self._empty_rounds.discard(step)
            total -= before
            done.append(Compaction(step=step, message_index=where[0], tokens_before=before, tokens_after=0,
                                   summarised=False, kind=CompactedKind.EMPTY_ROUND))
        return total

    async def _elide_observations(self, kept: set[int], total: int, threshold: int, done: list[Compaction]) -> int:
        for index, entry in enumerate(self._entries):
            if total <= threshold:
                break
            if entry.kind != "observation" or entry.compacted or entry.step in kept:
                continue
            message = self.messages[index]
            before = self.estimate([message])
            if before < self.policy.min_elide_tokens:
                continue
            replacement, summarised, error = await self._shorten(message.content or "", entry.step, before)
            self.messages[index] = message.model_copy(update={"content": entry.prefix + replacement})
            entry.compacted = True
            after = self.estimate([self.messages[index]])
            total -= before - after
            done.append(Compaction(step=entry.step, message_index=index, tokens_before=before, tokens_after=after,
                                   summarised=summarised, error=error))
        return total

    async def _elide_thoughts(self, kept: set[int], total: int, threshold: int, done: list[Compaction]) -> int:
        for index, entry in enumerate(self._entries):
            if total <= threshold:
                break
            if entry.kind != "assistant" or entry.compacted or entry.thought is None or entry.step in kept:
                continue
            message = self.messages[index]
            content = message.content or ""
            if entry.thought not in content:
                continue
            if self.estimate([Message(role="assistant", content=entry.thought)]) < self.policy.min_thought_tokens:
                continue
            before = self.estimate([message])
            self.messages[index] = message.model_copy(
                update={"content": content.replace(entry.thought, THOUGHT_MARKER, 1)}
            )
            entry.compacted = True
            after = self.estimate([self.messages[index]])
            total -= before - after
            done.append(Compaction(step=entry.step, message_index=index, tokens_before=before, tokens_after=after,
                                   summarised=False, kind=CompactedKind.THOUGHT))
        return total

    async def _shorten(self, text: str, step: int, tokens: int) -> tuple[str, bool, str | None]:
        marker = elision_marker(step, tokens)
        if self.policy.summariser is None:
            return marker, False, None
        try:
            out = self.policy.summariser(text)
            summary = await out if inspect.isawaitable(out) else out
        except Exception as exc:  # a user callback: its failure must not end the run
            return marker, False, f"{type(exc).__name__}: {exc}"
        if not isinstance(summary, str) or not summary.strip():
            return marker, False, "summariser returned no text"
        candidate = f"[summary of observation from step {step}] {summary.strip()}"
        if len(candidate) >= len(text):
            return marker, False, "summary was not shorter than the observation"
        return candidate, True, None
