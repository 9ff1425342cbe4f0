"""Re-run a stored run exactly: an LLM that answers with what the model said, step by step.

A `RunResult` records, per step, the model's thought, its tool calls or its final answer, and the
usage it reported. Served back in order, they make the loop take the same path again (same tool
calls with the same ids, same answer, same token and cost accounting) without a provider, so a
trace can be debugged, diffed against new code, or re-executed against changed tools.

Wire format chosen so `kernel.parsing.parse_response` reads it back the same in either loop mode:
tool calls go in function-calling shape (`tool_calls`, with the thought as `text`), final answers
as text `Thought: ...` / `Final Answer: ...`. An unparsable step is replayed as an empty reply
carrying `format_error`, so it is unparsable again (its original raw text is not recorded, so the
exact parse error message can differ; likewise a `repaired` step replays as canonical, `ok`).
"""

from __future__ import annotations

from typing import Any

from kernel.llm.base import LLMError
from kernel.types import LLMResponse, Message, RunResult, StepRecord
from tracer.conventions import StepKind

REPLAY_PROVIDER = "replay"


class ReplayExhausted(LLMError):
    """The re-run asked for more turns than were recorded: it diverged from the original."""

    def __init__(self, recorded: int, requested: int, trace_id: str | None) -> None:
        which = f"run {trace_id}" if trace_id else "the recorded run"
        super().__init__(
            f"replay of {which} has {recorded} recorded step(s) but turn {requested} was requested; "
            "the re-run diverged from the recording",
            error_type="replay_exhausted",
        )


def final_answer_text(answer: str, thought: str | None) -> str:
    """The classic ReAct finish, which the text parser reads in either loop mode."""
    head = f"Thought: {thought}\n" if thought else ""
    return f"{head}Final Answer: {answer}"


def response_for_step(step: StepRecord, *, answer_fallback: str | None = None, model: str = "") -> LLMResponse:
    """What the model said in `step`, as an `LLMResponse` the parser turns back into that step."""
    base: dict[str, Any] = {
        "usage": step.usage.model_copy(),
        "model": step.model or model,
        "provider": REPLAY_PROVIDER,
    }
    if step.calls:
        return LLMResponse(text=step.thought, tool_calls=[c.model_copy(deep=True) for c in step.calls],
                           finish_reason="tool_calls", **base)
    answer = step.answer if step.answer is not None else answer_fallback
    if answer is not None and step.kind != StepKind.FORMAT_ERROR:
        return LLMResponse(text=final_answer_text(answer, step.thought), finish_reason="stop", **base)
    return LLMResponse(
        text=None,
        finish_reason="stop",
        format_error=f"replayed step {step.index}: the recorded reply was unparsable",
        **base,
    )


class ReplayLLM:
    """Implements `LLM`; each `complete` returns the next recorded step's reply.

    `requests` keeps the messages each turn was asked with, so a replay can be diffed against the
    original conversation.
    """

    def __init__(self, run: RunResult) -> None:
        self.run = run
        self.model = run.models[0] if run.models else (next((s.model for s in run.steps if s.model), None)
                                                       or "replay")
        self.provider = REPLAY_PROVIDER
        last = len(run.steps) - 1
        self._responses = [
            response_for_step(
                step,
                # Older records may carry the answer only on the run, not on its final step.
                answer_fallback=run.answer if i == last and step.kind == StepKind.FINISH else None,
                model=self.model,
            )
            for i, step in enumerate(run.steps)
        ]
        self.requests: list[list[Message]] = []

    @property
    def position(self) -> int:
        """How many recorded turns have been served."""
        return len(self.requests)

    @property
    def remaining(self) -> int:
        return max(0, len(self._responses) - len(self.requests))

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        **extra: Any,
    ) -> LLMResponse:
        self.requests.append([m.model_copy(deep=True) for m in messages])
        turn = len(self.requests)
        if turn > len(self._responses):
            raise ReplayExhausted(len(self._responses), turn, self.run.trace_id)
        return self._responses[turn - 1].model_copy(deep=True)
