"""A simulated model: drives the example agents without network, deterministically per seed.

Two layers, kept apart so each can be tested alone:
- a *policy* per agent (`AgentPolicy`): what a competent model would do next, given the run so
  far as the model sees it in its prompt (`kernel.examples.memory`). Policies read the prompt,
  tool descriptions included, so agent versions that differ only in a prompt or a description
  really behave differently (see `kernel.examples.ticket` / `ops` for the documented changes);
- *faults* (`FaultRates`): the ways real models stray from that, drawn from a seeded RNG.

Usage is reported the way a provider reports it (`estimated=False`): prompt tokens counted from
the messages with `kernel.tokens`, completion tokens from the reply, cached prompt tokens the
way OpenAI's automatic prompt cache bills them (the previous prompt, in 128-token blocks, from
1,024 tokens on). The reply carries a dated model id ("gpt-4o-mini-2024-07-18") like the real
APIs do, so costs are priced from `tracer/prices.toml`.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from kernel.examples.faults import (
    FaultRates,
    canonical_answer,
    canonical_call,
    jittered_answer,
    jittered_call,
    ramble,
    unparsable_reply,
    wrong_call,
)
from kernel.examples.memory import Memory, read_memory
from kernel.llm.base import LLMError
from kernel.tokens import estimate_messages_tokens, estimate_tokens
from kernel.types import LLMResponse, Message, ToolCall, Usage

_CACHE_MIN_TOKENS = 1024
_CACHE_BLOCK = 128


@dataclass(frozen=True)
class Act:
    """Call one tool."""

    tool: str
    args: dict[str, Any]
    thought: str


@dataclass(frozen=True)
class Answer:
    """Give the final answer."""

    text: str
    thought: str


Intent = Act | Answer


class AgentPolicy(Protocol):
    """What a competent model would do next in one agent's domain."""

    def next(self, memory: Memory, rng: random.Random) -> Intent: ...

    def made_up_answer(self, memory: Memory, rng: random.Random) -> str:
        """The confident answer a model gives when it ignores a failed tool call."""
        ...


class SimulatedLLM:
    """Implements `LLM`. One instance per run (it holds the run's RNG and fault counters).

    `injected` counts every fault actually injected (by the names in `FAULT_NAMES`), so tests and
    the demo summary can compare the mix of causes with the mix of effects in the traces.
    `latency_s` is a (min, max) range of simulated response time per call; the demo keeps it tiny.
    """

    def __init__(
        self,
        policy: AgentPolicy,
        *,
        seed: int | str = 0,
        faults: FaultRates | None = None,
        model: str = "gpt-4o-mini",
        response_model: str | None = None,
        provider: str = "openai",
        latency_s: tuple[float, float] = (0.0, 0.0),
    ) -> None:
        self.policy = policy
        self.rng = random.Random(f"simulated:{seed}")
        self.faults = faults or FaultRates()
        self.model = model
        self.response_model = response_model or model
        self.provider = provider
        self.latency_s = latency_s
        self.injected: Counter[str] = Counter()
        self.calls = 0
        self._looping = False
        self._run_seed = self.rng.getrandbits(32)

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        **_: Any,
    ) -> LLMResponse:
        self.calls += 1
        low, high = self.latency_s
        if high > 0:
            await asyncio.sleep(self.rng.uniform(low, high))
        if self._draw("outage"):
            self.injected["outage"] += 1
            raise self._outage()
        memory = read_memory(messages)
        memory.seed = self._run_seed
        text, call = self._reply(memory, native=tools is not None)
        response = LLMResponse(
            text=text,
            tool_calls=[call] if call is not None else [],
            model=self.response_model,
            provider=self.provider,
            finish_reason="tool_calls" if call is not None else "stop",
        )
        completion = estimate_tokens(text or "") + (
            estimate_tokens(call.name) + estimate_tokens(repr(call.arguments)) if call else 0
        )
        if max_tokens is not None and completion > max_tokens:
            # A real provider stops at the limit and says so; the kernel refuses to use cut output.
            response.text = (text or "")[: max(0, max_tokens) * 4]
            response.tool_calls = []
            response.finish_reason = "length"
            completion = max_tokens
        response.usage = self._usage(messages, tools, memory, completion)
        return response

    # ---- deciding -------------------------------------------------------------------------

    def _draw(self, fault: str) -> bool:
        rate = getattr(self.faults, fault)
        return rate > 0 and self.rng.random() < rate

    def _reply(self, memory: Memory, native: bool) -> tuple[str | None, ToolCall | None]:
        last = memory.last
        # Stuck in a loop: repeat the previous call verbatim.
        previous = memory.last_executed_call()
        if self._looping and previous is not None and self.rng.random() < self.faults.loop_stickiness:
            self.injected["repeat"] += 1
            return self._render_call(previous.name, previous.arguments, "Let me check that again.", native)
        self._looping = False
        # Garbled output tends to come in streaks.
        garbling = memory.consecutive_unparsable > 0 and self.rng.random() < self.faults.unparsable_stickiness
        if not native and (garbling or self._draw("unparsable")):
            self.injected["unparsable"] += 1
            intent = self.policy.next(memory, self.rng)
            name = intent.tool if isinstance(intent, Act) else None
            return unparsable_reply(self.rng, intent.thought, name), None
        # Ignoring the error the last call returned: finish with a made-up answer.
        if last is not None and last.outcome == "error" and self._draw("ignore_error"):
            self.injected["ignore_error"] += 1
            answer = self.policy.made_up_answer(memory, self.rng)
            return self._render_answer("That should be enough to answer.", answer, native)
        if previous is not None and self._draw("repeat"):
            self.injected["repeat"] += 1
            self._looping = True
            return self._render_call(previous.name, previous.arguments, "Let me check that again.", native)
        intent = self.policy.next(memory, self.rng)
        thought = intent.thought
        if self._draw("ramble"):
            self.injected["ramble"] += 1
            thought = f"{ramble(self.rng)} {thought}"
        if isinstance(intent, Answer):
            return self._render_answer(thought, intent.text, native)
        name, args = intent.tool, intent.args
        if self._draw("wrong_tool"):
            self.injected["wrong_tool"] += 1
            name, args = wrong_call(self.rng, name, args)
        return self._render_call(name, args, thought, native)

    def _render_call(self, name: str, args: dict[str, Any], thought: str, native: bool) -> tuple[str | None, ToolCall | None]:
        if native:
            return None, ToolCall(id=f"call_{self.rng.getrandbits(48):012x}", name=name, arguments=dict(args))
        if self._draw("format_jitter"):
            self.injected["format_jitter"] += 1
            return jittered_call(self.rng, thought, name, args), None
        return canonical_call(thought, name, args), None

    def _render_answer(self, thought: str, answer: str, native: bool) -> tuple[str | None, ToolCall | None]:
        if native:
            return answer, None
        if self._draw("format_jitter"):
            self.injected["format_jitter"] += 1
            return jittered_answer(self.rng, thought, answer), None
        return canonical_answer(thought, answer), None

    # ---- provider behaviour ---------------------------------------------------------------

    def _outage(self) -> LLMError:
        if self.provider == "anthropic":
            return LLMError("Overloaded", error_type="overloaded_error", retryable=True, status_code=529)
        return LLMError(
            "Rate limit reached for requests", error_type="rate_limit_exceeded", retryable=True,
            status_code=429, retry_after=1.0,
        )

    def _usage(self, messages: list[Message], tools: list[dict] | None, memory: Memory, completion: int) -> Usage:
        prompt = estimate_messages_tokens(messages)
        if tools:
            prompt += estimate_tokens(repr(tools))
        cached = 0
        if self.provider == "openai" and memory.turns:
            # The previous call's prompt is a prefix of this one; OpenAI bills it as cached.
            previous = estimate_messages_tokens(messages[:-2]) if len(messages) > 2 else 0
            if previous >= _CACHE_MIN_TOKENS:
                cached = min(prompt, previous // _CACHE_BLOCK * _CACHE_BLOCK)
        return Usage(input_tokens=prompt, output_tokens=completion, cached_input_tokens=cached, estimated=False)
