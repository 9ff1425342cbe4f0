"""The ways real models go wrong, as rates the simulated model draws against.

Each fault mimics something seen in production agent traces, and each leaves its own mark in the
telemetry, so dashboards and alerts have real patterns to find:

| fault | what the model does | what the trace shows |
|---|---|---|
| `format_jitter` | answers in another dialect: a JSON object, a fenced block, `**bold**` labels, single-quoted arguments, an invented `Observation:` | `steplens.step.parse` = ok / repaired |
| `unparsable` | rambles in prose with no action at all (sticky: `unparsable_stickiness`) | format_error steps; 3 in a row → `unparsable_exhausted` |
| `wrong_tool` | calls a tool that does not exist, or misnames an argument | `unknown_tool` / `invalid_arguments` tool errors, one extra step |
| `repeat` | repeats its previous call verbatim (sticky: `loop_stickiness`) | loop_guard steps; hard repeats count as errors → `tool_error_exhausted` or `max_steps` |
| `ignore_error` | after a failed tool call, finishes anyway with a made-up answer | ok=true runs whose last tool call failed (wrong answers that look like successes) |
| `ramble` | writes a long thought (hundreds to ~1,500 tokens) | output-token and cost outliers; budgets hit |
| `outage` | the provider answers 429 / 529 for this call | chat spans with `error.type`; retries, fallbacks, `llm_unavailable` |

Rates are per model call, except `ignore_error` (per failed tool call the model sees) and the
stickiness values (per call while the fault is active). `FaultRates.none()` gives a model that
follows its policy perfectly.
"""

from __future__ import annotations

import json
import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class FaultRates(BaseModel):
    """Probabilities in [0, 1]. The defaults are the demo's "typical production model"."""

    model_config = ConfigDict(frozen=True)

    format_jitter: float = Field(default=0.10, ge=0, le=1)
    unparsable: float = Field(default=0.02, ge=0, le=1)
    unparsable_stickiness: float = Field(default=0.5, ge=0, le=1)
    wrong_tool: float = Field(default=0.04, ge=0, le=1)
    repeat: float = Field(default=0.04, ge=0, le=1)
    loop_stickiness: float = Field(default=0.6, ge=0, le=1)
    ignore_error: float = Field(default=0.2, ge=0, le=1)
    ramble: float = Field(default=0.05, ge=0, le=1)
    outage: float = Field(default=0.01, ge=0, le=1)

    @classmethod
    def none(cls) -> FaultRates:
        """A flawless model: follows its policy, always in the canonical format."""
        return cls(**{name: 0.0 for name in cls.model_fields})


# Names of the injected faults, as counted in `SimulatedLLM.injected` and `DemoSummary`.
FAULT_NAMES = ("format_jitter", "unparsable", "wrong_tool", "repeat", "ignore_error", "ramble", "outage")

_RAMBLE = (
    "Let me think about this carefully from several angles before acting.",
    "It is worth considering whether there is any ambiguity in what was asked.",
    "There are a number of possibilities here, and I want to be thorough.",
    "On the other hand, I should not jump to conclusions without checking.",
    "I recall that in situations like this the obvious answer is not always right.",
    "To be safe I will restate the problem in my own words once more.",
    "Several details might matter, so let me enumerate them one by one.",
    "It is also possible the data is stale, which I should keep in mind.",
)


def ramble(rng: random.Random) -> str:
    """A long, content-free thought (about 300-1,500 tokens), like a model thinking out loud."""
    sentences = rng.randint(20, 100)
    return " ".join(rng.choice(_RAMBLE) for _ in range(sentences))


# ---- rendering one decision as text (text mode) -------------------------------------------------


def canonical_call(thought: str, name: str, args: dict[str, Any]) -> str:
    return f"Thought: {thought}\nAction: {name}\nAction Input: {json.dumps(args, ensure_ascii=False)}"


def canonical_answer(thought: str, answer: str) -> str:
    return f"Thought: {thought}\nFinal Answer: {answer}"


def jittered_call(rng: random.Random, thought: str, name: str, args: dict[str, Any]) -> str:
    """The same call in a dialect real models drift into (the kernel's parser understands all of them:
    some as `ok`, some only after repair)."""
    dialect = rng.choice(("json", "fenced", "bold", "single_quotes", "invented_observation"))
    obj = {"thought": thought, "action": name, "args": args}
    if dialect == "json":
        return json.dumps(obj, ensure_ascii=False)
    if dialect == "fenced":
        return f"I'll use a tool.\n```json\n{json.dumps(obj, ensure_ascii=False, indent=2)}\n```"
    if dialect == "bold":
        return f"**Thought:** {thought}\n**Action:** {name}\n**Action Input:** {json.dumps(args, ensure_ascii=False)}"
    if dialect == "single_quotes":
        return f"Thought: {thought}\nAction: {name}\nAction Input: {args!r}"
    return canonical_call(thought, name, args) + '\nObservation: {"status": "ok"}'


def jittered_answer(rng: random.Random, thought: str, answer: str) -> str:
    dialect = rng.choice(("json", "fenced", "bold"))
    obj = {"thought": thought, "action": "finish", "args": {"answer": answer}}
    if dialect == "json":
        return json.dumps(obj, ensure_ascii=False)
    if dialect == "fenced":
        return f"```json\n{json.dumps(obj, ensure_ascii=False)}\n```"
    return f"**Thought:** {thought}\n**Final Answer:** {answer}"


def unparsable_reply(rng: random.Random, thought: str, name: str | None) -> str:
    """Prose with no action and no final answer: the kernel cannot use it."""
    what = name.replace("_", " ") if name else "the answer"
    return rng.choice(
        (
            f"{thought} I'm going to look at {what} next and then get back to you.",
            f"Sure! Let me check {what}. One moment please.",
            f"I think the next step is {what}, but I want to be sure before I commit to anything.",
        )
    )


_WRONG_NAMES = {"query_": "get_", "search_": "find_", "read_": "open_", "create_": "new_", "resolve_": "close_"}


def wrong_call(rng: random.Random, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A plausible mistake: a tool name that does not exist (`unknown_tool`), or the right tool with
    a misnamed argument (`invalid_arguments`)."""
    if args and rng.random() < 0.5:
        key = rng.choice(sorted(args))
        bad = {("id" if k == key else k): v for k, v in args.items()} if key != "id" else {"identifier": args[key]}
        return name, bad
    for prefix, alias in _WRONG_NAMES.items():
        if name.startswith(prefix):
            return alias + name[len(prefix) :], args
    return name + "_tool", args
