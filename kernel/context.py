"""The conversation the model sees, and how it is kept under the context limit.

The loop appends to one `Context` per run; `messages` is what goes to the LLM. Keeping this in one
place means the two modes differ only here: in text mode tools are described in the system prompt
and observations come back as user messages; in function-calling mode tools go in the OpenAI
`tools` parameter and observations are `tool` messages answering each `tool_call_id`.

Compaction is why this is more than a list: long agent runs fill the window with old tool output
nobody needs verbatim any more. When the estimated prompt passes `watermark * context_limit_tokens`,
old long observations are replaced (oldest first) by a short marker, or by a summary when a
summariser is given. The system prompt, the task and the latest step's observations are never
touched: the first two define the job, the last is what the model must react to now.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from kernel.types import Message, ToolCall

Mode = Literal["text", "function_calling"]
Summariser = Callable[[str], "str | Awaitable[str]"]
Estimator = Callable[[list[Message]], int]


@dataclass(frozen=True)
class ContextPolicy:
    """When and how to compact. `min_elide_tokens` spares short observations (eliding them saves
    little and loses facts)."""

    context_limit_tokens: int = 128_000
    watermark: float = 0.8
    min_elide_tokens: int = 200
    summariser: Summariser | None = None

    @property
    def threshold_tokens(self) -> int:
        return int(self.context_limit_tokens * self.watermark)


class Compaction(BaseModel):
    """One observation shortened; kept so the run (and later its trace) can show what was lost."""

    step: int
    message_index: int
    tokens_before: int
    tokens_after: int
    summarised: bool
    error: str | None = None  # the summariser's failure, when it fell back to the marker


@dataclass
class _ObservationSlot:
    message_index: int
    step: int
    prefix: str = ""  # kept in front of the replacement so the model still sees what it was
    compacted: bool = False


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
    _slots: list[_ObservationSlot] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.messages:
            system = self.system_prompt
            if self.mode == "text" and self.tool_prompt:
                system = f"{system}\n\n{self.tool_prompt}" if system else self.tool_prompt
            self.messages = [Message(role="system", content=system), Message(role="user", content=self.task)]

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

    def add_assistant(self, text: str | None, calls: list[ToolCall] | None = None) -> None:
        """The model's turn. In text mode the raw text carries the calls; in function-calling mode
        the calls ride on the message so the following tool messages can answer them."""
        if self.mode == "function_calling":
            self.messages.append(Message(role="assistant", content=text, tool_calls=list(calls or [])))
        else:
            self.messages.append(Message(role="assistant", content=text or ""))

    def add_observations(self, step: int, results: list[tuple[ToolCall, str]]) -> None:
        """What the tools returned (already truncated), as the model will see it."""
        if not results:
            return
        if self.mode == "function_calling":
            for call, text in results:
                self._slots.append(_ObservationSlot(len(self.messages), step))
                self.messages.append(
                    Message(role="tool", content=text, tool_call_id=call.id, name=call.name)
                )
            return
        if len(results) == 1:
            body = f"Observation: {results[0][1]}"
        else:
            body = "\n\n".join(f"Observation ({call.name}, id {call.id}): {text}" for call, text in results)
        self._slots.append(_ObservationSlot(len(self.messages), step, prefix="Observation: "))
        self.messages.append(Message(role="user", content=body))

    def add_feedback(self, text: str) -> None:
        """Kernel feedback that answers no tool call (format errors, refused finishes)."""
        self.messages.append(Message(role="user", content=text))

    # ---- compaction ---------------------------------------------------------------------------

    async def compact(self) -> list[Compaction]:
        """Shorten old long observations until the prompt is under the watermark.

        Returns what was done this time (empty when nothing was needed). Never raises on a
        summariser failure: the marker is used and the error recorded.
        """
        threshold = self.policy.threshold_tokens
        total = self.prompt_tokens()
        if total <= threshold or not self._slots:
            return []
        latest_step = self._slots[-1].step
        done: list[Compaction] = []
        for slot in self._slots:
            if total <= threshold:
                break
            if slot.compacted or slot.step == latest_step:
                continue
            message = self.messages[slot.message_index]
            before = self.estimate([message])
            if before < self.policy.min_elide_tokens:
                continue
            replacement, summarised, error = await self._shorten(message.content or "", slot.step, before)
            content = slot.prefix + replacement
            self.messages[slot.message_index] = message.model_copy(update={"content": content})
            slot.compacted = True
            after = self.estimate([self.messages[slot.message_index]])
            total -= before - after
            done.append(
                Compaction(
                    step=slot.step,
                    message_index=slot.message_index,
                    tokens_before=before,
                    tokens_after=after,
                    summarised=summarised,
                    error=error,
                )
            )
        self.compactions.extend(done)
        return done

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
