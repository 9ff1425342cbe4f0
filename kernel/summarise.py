"""A compaction summariser backed by an LLM: `Agent(summariser=llm_summariser(llm))`.

Why a helper rather than asking users to write the callback: the summary call must say it is a
`summary` (so a `Router` can send it to a cheap model, and its chat span shows what it was for),
and it must go through `kernel.telemetry.complete` so that span nests under `compact_context`.
A failure raises, and `Context` then falls back to the elision marker and records the error.
The run that compacts (`Agent._compact`) installs an accountant with `accounted_by`, so a
summary's tokens and cost count against the run's budget like any other call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from kernel import telemetry
from kernel.context import Summariser
from kernel.llm.base import LLM
from kernel.types import LLMResponse, Message
from tracer.conventions import LLMPurpose

Accountant = Callable[[LLM, list[Message], LLMResponse], None]
_ACCOUNTANT: ContextVar[Accountant | None] = ContextVar("steplens_summary_accountant", default=None)


@contextmanager
def accounted_by(accountant: Accountant) -> Iterator[None]:
    """Summaries made inside are reported to `accountant(llm, messages, response)`."""
    token = _ACCOUNTANT.set(accountant)
    try:
        yield
    finally:
        _ACCOUNTANT.reset(token)

SUMMARY_INSTRUCTIONS = (
    "Summarise this tool output for an agent that will keep working on its task. Keep every "
    "number, name, identifier and error message it may need; drop formatting and repetition. "
    "Answer with the summary only."
)


def llm_summariser(
    llm: LLM, *, max_tokens: int = 300, instructions: str = SUMMARY_INSTRUCTIONS
) -> Summariser:
    """A summariser calling `llm` with purpose `summary`, at temperature 0, capped at `max_tokens`."""

    async def summarise(text: str) -> str:
        messages = [Message(role="system", content=instructions), Message(role="user", content=text)]
        response = await telemetry.complete(
            llm, messages, None, temperature=0.0, max_tokens=max_tokens, purpose=LLMPurpose.SUMMARY
        )
        accountant = _ACCOUNTANT.get()
        if accountant is not None and isinstance(response, LLMResponse):
            accountant(llm, messages, response)
        return response.text or ""

    return summarise
