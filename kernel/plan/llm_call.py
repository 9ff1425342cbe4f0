"""One LLM call of plan-and-execute (plan, replan, solve): traced, accounted, bounded.

Tracing goes through the kernel's bridge (`kernel.telemetry.complete`), like the ReAct loop's
calls: one `chat {model}` span nested in whatever span is current (plan, replan, or the solver's
step), or one per attempt when the LLM opens its own (ResilientLLM, Router).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from kernel import telemetry
from kernel.llm import LLM, LLMError, classify_exception, estimate_usage
from kernel.llm.base import describe
from kernel.plan.state import PlanStop, RunState
from kernel.types import LLMResponse, Message, Usage
from tracer.conventions import LLMPurpose, StopReason
from tracer.pricing import cost_usd


@dataclass
class CallResult:
    response: LLMResponse
    usage: Usage
    cost_usd: float
    model: str


async def call_llm(
    llm: LLM,
    st: RunState,
    messages: list[Message],
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
    purpose: LLMPurpose = LLMPurpose.STEP,
) -> CallResult:
    """Complete `messages`; LLM failures and the run's wall clock become `PlanStop`. `purpose`
    (plan, replan, or step for the solver) lets a Router pick the model and goes on the chat span."""
    st.checkpoint()
    model, _ = describe(llm)
    remaining_out = st.budget.remaining_output_tokens()
    if remaining_out is not None:
        max_tokens = remaining_out if max_tokens is None else min(max_tokens, remaining_out)
    try:
        async with asyncio.timeout(st.budget.remaining_seconds()):
            response = await telemetry.complete(llm, messages, None, temperature=temperature, max_tokens=max_tokens,
                                                  purpose=purpose)
    except TimeoutError:
        raise PlanStop(StopReason.TIMEOUT, "wall-clock budget ran out during an LLM call") from None
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        err = exc if isinstance(exc, LLMError) else classify_exception(exc)
        raise PlanStop(StopReason.LLM_UNAVAILABLE, f"{err.error_type}: {err.message}") from exc
    if not isinstance(response, LLMResponse):
        raise PlanStop(StopReason.INTERNAL_ERROR, f"LLM returned {type(response).__name__}, not LLMResponse")
    used_model = response.model or model
    usage = response.usage if response.usage is not None else estimate_usage(messages, None, response)
    price = cost_usd(used_model, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
    if used_model and used_model not in st.models:
        st.models.append(used_model)
    if price is None and used_model not in st.unpriced_models:
        st.unpriced_models.append(used_model)
    st.budget.add_usage(usage)
    st.budget.add_cost(price or 0.0)
    return CallResult(response=response, usage=usage, cost_usd=price or 0.0, model=used_model)
