"""What a simulated model "remembers": its own earlier turns and what came back, read from the prompt.

The memory is rebuilt from the messages on every call instead of being kept in the model object,
for the same reason a real model has no memory: the conversation is the state. That keeps the
simulation honest (the model reacts to what the kernel really showed it: truncated observations,
loop-guard warnings, format feedback, policy denials) and lets a fallback model pick up a run
mid-way, exactly like a real fallback would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from kernel.dispatch import ERROR_PREFIX, NOT_EXECUTED_PREFIX, parse_error_observation
from kernel.memory import RECALL_HEADER
from kernel.parsing import parse_response
from kernel.types import LLMResponse, Message, ToolCall
from tracer.conventions import ParseStatus, ToolErrorCode

Outcome = Literal["ok", "error", "loop_warning", "not_executed", "format_feedback", "other"]

_OBS_PREFIX = "Observation: "
_LOOP_PREFIXES = ("Warning: ", "LOOP DETECTED")
_FEEDBACK_PREFIXES = ("Your last reply could not be used", "You cannot finish yet")


@dataclass
class Turn:
    """One earlier model turn: the call it made (None for a final answer or unusable output) and
    how the kernel answered it."""

    call: ToolCall | None
    outcome: Outcome
    result: Any = None  # the parsed JSON (or raw text) of a successful observation
    error_code: ToolErrorCode | None = None
    error_message: str = ""
    unparsable: bool = False


@dataclass
class Memory:
    """The run so far, as the model can see it in its prompt."""

    system: str
    task: str
    turns: list[Turn] = field(default_factory=list)
    # Stable for the whole run (set by the model): for choices a model makes once and sticks to.
    seed: int = 0

    def offers(self, tool: str) -> bool:
        """Is `tool` among the tools the prompt lists (text mode: "- name: description")?"""
        return f"\n- {tool}: " in self.system or self.system.startswith(f"- {tool}: ")

    @property
    def recalled(self) -> list[str]:
        """The long-term memories the agent put in the system prompt ("key: value" each)."""
        if RECALL_HEADER not in self.system:
            return []
        block = self.system.split(RECALL_HEADER, 1)[1].lstrip("\n")
        lines: list[str] = []
        for line in block.split("\n"):
            if not line.startswith("- "):
                break
            lines.append(line[2:])
        return lines

    @property
    def last(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def ok_results(self, tool: str) -> list[tuple[dict[str, Any], Any]]:
        """(arguments, result) of every successful call of `tool`, oldest first."""
        return [(t.call.arguments, t.result) for t in self.turns if t.call and t.call.name == tool and t.outcome == "ok"]

    def last_ok(self, tool: str) -> Any:
        found = self.ok_results(tool)
        return found[-1][1] if found else None

    def recorded(self, tool: str) -> bool:
        """A call of `tool` was recorded but not executed (shadow mode, pending approval)."""
        return any(t.call is not None and t.call.name == tool and t.outcome == "not_executed" for t in self.turns)

    def tried(self, tool: str) -> bool:
        return any(t.call is not None and t.call.name == tool for t in self.turns)

    def failed(self, tool: str, *codes: ToolErrorCode) -> Turn | None:
        """The latest failed call of `tool` with one of `codes` (any code when none given)."""
        for t in reversed(self.turns):
            if t.call and t.call.name == tool and t.outcome == "error" and (not codes or t.error_code in codes):
                return t
        return None

    def not_found(self, tool: str) -> bool:
        """Did `tool` say the thing asked for does not exist? (Our tools raise `NotFound`.)"""
        turn = self.failed(tool, ToolErrorCode.EXCEPTION)
        return turn is not None and "NotFound" in turn.error_message

    def last_executed_call(self) -> ToolCall | None:
        for t in reversed(self.turns):
            if t.call is not None and t.outcome in ("ok", "error", "not_executed"):
                return t.call
        return None

    @property
    def consecutive_unparsable(self) -> int:
        n = 0
        for t in reversed(self.turns):
            if not t.unparsable:
                break
            n += 1
        return n


def _classify(text: str) -> tuple[Outcome, Any, ToolErrorCode | None, str]:
    if text.startswith(ERROR_PREFIX):
        err = parse_error_observation(text)
        if err is None:
            return "error", None, ToolErrorCode.EXCEPTION, text
        return "error", None, err.error, err.message
    if text.startswith(NOT_EXECUTED_PREFIX):
        return "not_executed", None, None, ""
    if text.startswith(_LOOP_PREFIXES):
        return "loop_warning", None, None, ""
    if text.startswith(_FEEDBACK_PREFIXES):
        return "format_feedback", None, None, ""
    try:
        return "ok", json.loads(text), None, ""
    except ValueError:  # plain text, or JSON cut by truncation: the model reads it as text
        return "ok", text, None, ""


def read_memory(messages: list[Message]) -> Memory:
    """Rebuild the run from the prompt (text mode and function-calling mode). Never raises on odd
    transcripts: anything it cannot pair up is skipped."""
    system = next((m.content or "" for m in messages if m.role == "system"), "")
    task = next((m.content or "" for m in messages if m.role == "user"), "")
    memory = Memory(system=system, task=task)
    for i, message in enumerate(messages):
        if message.role != "assistant":
            continue
        following = messages[i + 1] if i + 1 < len(messages) else None
        if message.tool_calls:  # function-calling mode: tool messages answer the calls
            call = message.tool_calls[0]
            answer = next(
                (m for m in messages[i + 1 :] if m.role == "tool" and m.tool_call_id == call.id), None
            )
            outcome, result, code, msg = _classify(answer.content or "") if answer else ("other", None, None, "")
            memory.turns.append(Turn(call, outcome, result, code, msg))
            continue
        parsed = parse_response(LLMResponse(text=message.content or ""), text_is_final=False)
        if parsed.status == ParseStatus.UNPARSABLE:
            memory.turns.append(Turn(None, "format_feedback", unparsable=True))
            continue
        call = parsed.calls[0] if parsed.calls else None
        body = (following.content or "") if following is not None and following.role == "user" else ""
        if call is not None and body.startswith(_OBS_PREFIX):
            outcome, result, code, msg = _classify(body[len(_OBS_PREFIX) :])
        elif body:
            outcome, result, code, msg = _classify(body)
        else:
            outcome, result, code, msg = "other", None, None, ""
        memory.turns.append(Turn(call, outcome, result, code, msg))
    return memory
