"""Reading the model's output into tool calls or a final answer. Never raises.

Models drift from any format they are given, so the parser accepts the common dialects and says
how far the output was from the canonical form (`ParseStatus`):

- `ok`: the canonical ReAct form (`Thought:` / `Action:` / `Action Input: {json}` or
  `Final Answer:`), or a JSON object `{"thought": ..., "action": ..., "args": {...}}` (bare or in a
  code fence), or provider tool calls with valid arguments.
- `repaired`: it was understood, but only after repair or aliasing: key aliases (tool, name,
  arguments, parameters, action_input...), decorated labels (`**Action:**`), JSON fixed by
  `json_repair` (single or smart quotes, trailing commas, unclosed braces), non-object arguments
  (kept under `_raw`), an invented continuation after the action (`Observation: ...`).
- `unparsable`: nothing usable. `error` says exactly why; feed it back with `EXPECTED_FORMAT`.

Tool call ids in text mode are derived from the call's content (`call_<index>_<hash>`), so the
same output parses to the same ids and replays line up.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import json_repair

from kernel.types import LLMResponse, ToolCall
from tracer.conventions import ACTION_FINISH, ParseStatus

EXPECTED_FORMAT = """\
Reply in exactly one of these two forms.

To call a tool:
Thought: <what you know; what you still need; your next action>
Action: <tool name>
Action Input: <the arguments as a JSON object, e.g. {"query": "weather in Paris"}>

To give the final answer:
Thought: <what you know from the observations, and why it answers the task>
Final Answer: <your answer, citing the observations it rests on>

Instead of the lines you may reply with one JSON object:
{"thought": "<reasoning>", "action": "<tool name>", "args": {<arguments>}}
and finish with {"action": "finish", "args": {"answer": "<your answer>"}}."""

RAW_KEY = "_raw"
_CUT_OFF_REASONS = ("length", "max_tokens")
_CUT_OFF_MESSAGE = "the output was cut off at the token limit"
FINISH_ARG = "answer"

_NAME_KEYS = ("action", "tool", "name", "tool_name", "function")
_ARGS_KEYS = ("args", "arguments", "parameters", "action_input", "tool_input", "input", "params")
_THOUGHT_KEYS = ("thought", "thoughts", "reasoning")
_FINAL_KEYS = ("final_answer", "finalAnswer", "final")
_FINISH_NAMES = {"finish", "final_answer", "final answer", "finalanswer", "final"}
_CANONICAL_LABELS = {
    "thought": "Thought:",
    "action": "Action:",
    "input": "Action Input:",
    "final": "Final Answer:",
}

_LABEL_RE = re.compile(
    r"^[ \t>#*_-]*(?P<label>thought|action[ _]?input|action|final[ _]?answer|observation)[ \t*_]*:[ \t*_]*",
    re.IGNORECASE | re.MULTILINE,
)
_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_MAX_REPAIR_CHARS = 200_000
_MAX_REPAIR_DEPTH = 64
_BRACKETS_RE = re.compile(r"[^\[\]{}]+")
_QUOTES = {'"': '"', "\u201c": "\u201d", "'": "'"}
_NAME_RE = re.compile(r"[A-Za-z0-9_.\-]+(?: [A-Za-z]+)?")


@dataclass
class ParsedOutput:
    """What one model turn asked for: tool calls, or a final answer, or a parse error."""

    status: ParseStatus
    thought: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    final_answer: str | None = None
    error: str | None = None  # set only when status is UNPARSABLE

    @property
    def is_final(self) -> bool:
        return self.final_answer is not None and self.status != ParseStatus.UNPARSABLE


class _ParseFailure(Exception):
    """Internal: carries the exact reason to the UNPARSABLE result."""


def make_call_id(index: int, name: str, arguments: dict[str, Any]) -> str:
    """A deterministic id for a call the model made in text (text has no ids of its own)."""
    payload = json.dumps([name, arguments], sort_keys=True, ensure_ascii=False, default=repr)
    return f"call_{index}_{hashlib.sha256(payload.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def _unparsable(error: str, thought: str | None = None) -> ParsedOutput:
    return ParsedOutput(ParseStatus.UNPARSABLE, thought=thought or None, error=error)


# --------------------------------------------------------------------------------------------
# JSON helpers
# --------------------------------------------------------------------------------------------


def _find_objects(text: str) -> list[tuple[int, int]]:
    """Spans of the top-level `{...}` objects in `text`, by brace matching that skips braces
    inside strings (double, smart or single quoted). An object left open at the end spans to the
    end of the text (json_repair can close it)."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        start = text.find("{", i)
        if start < 0:
            break
        depth, close_quote, escaped, prev, j = 0, "", False, "", start
        while j < n:
            ch = text[j]
            if close_quote:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == close_quote:
                    close_quote = ""
            elif ch in _QUOTES and (ch != "'" or prev in "{[,:"):
                # An apostrophe opens a string only where a value or key can start, so that
                # "don't" in unquoted junk does not swallow the rest of the text.
                close_quote = _QUOTES[ch]
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            if not ch.isspace():
                prev = ch
            j += 1
        if j >= n:
            spans.append((start, n))
            break
        spans.append((start, j + 1))
        i = j + 1
    return spans


def _repairable(text: str) -> bool:
    """json_repair is recursive pure Python: on huge or absurdly nested input it takes seconds
    and then gives up. Such output is garbage anyway, so it gets the strict error at once."""
    if len(text) > _MAX_REPAIR_CHARS:
        return False
    depth = deepest = 0
    for ch in _BRACKETS_RE.sub("", text):
        depth = depth + 1 if ch in "{[" else max(depth - 1, 0)
        deepest = max(deepest, depth)
        if deepest > _MAX_REPAIR_DEPTH:
            return False
    return True


def _loads(text: str) -> tuple[Any, bool, str | None]:
    """(value, repaired, error). Strict JSON first; then json_repair (single/smart quotes,
    trailing commas, missing braces). `error` is the strict parser's message when repair also
    produced nothing usable."""
    try:
        return json.loads(text), False, None
    except (ValueError, RecursionError) as exc:
        strict_error = str(exc)
    if not _repairable(text):
        return None, True, strict_error
    try:
        value = json_repair.loads(text)
    except Exception:  # json_repair is best effort; its failure is the strict error's problem
        value = None
    if value in ("", None):
        return None, True, strict_error
    return value, True, strict_error


def _strip_fence(text: str) -> str:
    text = text.strip()
    m = _FENCE_RE.search(text)
    if m and not text[: m.start()].strip():
        return m.group(2).strip()
    return text


# --------------------------------------------------------------------------------------------
# Turning pieces into calls
# --------------------------------------------------------------------------------------------


def _args_from_text(text: str) -> tuple[dict[str, Any], bool]:
    """Arguments from an `Action Input:` body: (args, repaired). Never fails: what is not a JSON
    object is kept under `_raw` for dispatch to report."""
    body = _strip_fence(text)
    if not body:
        return {}, False
    value, repaired, _ = _loads(body)
    if isinstance(value, dict) and not repaired:
        return value, False
    spans = _find_objects(body)
    if spans:
        s, e = spans[0]
        obj, _, _ = _loads(body[s:e])
        if isinstance(obj, dict):
            return obj, True
    if isinstance(value, dict):
        return value, True
    if value is None or repaired:
        return {RAW_KEY: body}, True
    return {RAW_KEY: value}, True


def _coerce_args(value: Any) -> tuple[dict[str, Any], bool]:
    """Arguments from a JSON value under an args key: (args, repaired)."""
    if value is None:
        return {}, False
    if isinstance(value, dict):
        return value, False
    if isinstance(value, str):
        parsed, _, _ = _loads(value)
        if isinstance(parsed, dict):
            return parsed, True
    return {RAW_KEY: value}, True


def _is_finish(name: str) -> bool:
    return name.strip().lower().replace("-", "_") in _FINISH_NAMES


def _is_exact_finish(name: str) -> bool:
    return name == ACTION_FINISH


def _answer_from_args(args: dict[str, Any], raw_text: str = "") -> str | None:
    if FINISH_ARG in args:
        value = args[FINISH_ARG]
    elif RAW_KEY in args:
        value = args[RAW_KEY]
    elif len(args) == 1:
        value = next(iter(args.values()))
    elif not args and raw_text.strip():
        value = raw_text.strip()
    else:
        return None
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)


def _finish_answer(args: dict[str, Any], raw_text: str = "") -> tuple[str, bool]:
    """(answer, repaired) for a `finish` action; raises _ParseFailure without an answer."""
    answer = _answer_from_args(args, raw_text)
    if answer is None or not answer.strip():
        raise _ParseFailure(f'the "{ACTION_FINISH}" action needs args {{"{FINISH_ARG}": "<your answer>"}}')
    return answer, FINISH_ARG not in args


def _assemble(
    actions: list[tuple[str, dict[str, Any], str]],
    thought: str | None,
    repaired: bool,
    is_finish: Callable[[str], bool] | None = None,
) -> ParsedOutput:
    """Build the result from (name, args, raw_args_text) actions, handling finish: a finish
    alone is the final answer; a finish next to tool calls is premature and dropped."""
    is_finish = is_finish or _is_finish
    tools = [(n, a) for n, a, _ in actions if not is_finish(n)]
    finishes = [(n, a, raw) for n, a, raw in actions if is_finish(n)]
    status = lambda rep: ParseStatus.REPAIRED if rep else ParseStatus.OK  # noqa: E731
    if tools:
        calls = [ToolCall(id=make_call_id(i, n, a), name=n, arguments=a) for i, (n, a) in enumerate(tools)]
        return ParsedOutput(status(repaired or bool(finishes)), thought=thought, calls=calls)
    name, args, raw = finishes[0]
    answer, rep = _finish_answer(args, raw)
    rep = rep or name != ACTION_FINISH or len(finishes) > 1
    return ParsedOutput(status(repaired or rep), thought=thought, final_answer=answer)


def _action_from_object(obj: dict[str, Any]) -> tuple[str, dict[str, Any], bool] | None:
    """(name, args, repaired) from one JSON object, or None if it names no action."""
    repaired = False
    name_key = next((k for k in _NAME_KEYS if k in obj), None)
    if name_key is None:
        final_key = next((k for k in _FINAL_KEYS if k in obj), None)
        if final_key is None:
            return None
        return ACTION_FINISH, {FINISH_ARG: obj[final_key]}, True
    name = obj[name_key]
    args_value: Any = None
    if isinstance(name, dict):  # OpenAI-shaped {"function": {"name": ..., "arguments": ...}}
        args_value = name.get("arguments", name.get("args", name.get("parameters")))
        name = name.get("name")
        repaired = True
    if not isinstance(name, str) or not name.strip():
        return None
    if name_key != "action":
        repaired = True
    args_key = next((k for k in _ARGS_KEYS if k in obj), None)
    if args_key is not None:
        args_value = obj[args_key]
        repaired = repaired or args_key != "args"
    args, rep = _coerce_args(args_value)
    return name.strip(), args, repaired or rep


def _thought_from_object(obj: dict[str, Any]) -> str | None:
    for key in _THOUGHT_KEYS:
        if isinstance(obj.get(key), str) and obj[key].strip():
            return obj[key].strip()
    return None


def _prose_thought(text: str) -> str | None:
    """Free text before the action, minus fence openers and a `Thought:` label."""
    text = re.sub(r"(```[A-Za-z0-9_+-]*\s*)?\[?\s*$", "", text.strip()).strip()
    m = _LABEL_RE.match(text)
    if m and m.group("label").lower() == "thought":
        text = text[m.end() :]
    return text.strip() or None


# --------------------------------------------------------------------------------------------
# Text mode
# --------------------------------------------------------------------------------------------


def _parse_json(text: str, thought: str | None = None, repaired: bool = False) -> ParsedOutput:
    # A bare JSON array of actions: [{"action": ...}, ...]
    body = _strip_fence(text)
    if body.startswith("["):
        value, rep, _ = _loads(body)
        if isinstance(value, list):
            found = [_action_from_object(v) for v in value if isinstance(v, dict)]
            actions = [(f[0], f[1], "") for f in found if f]
            if actions:
                rep = rep or any(f[2] for f in found if f)
                thought = thought or _prose_thought(text[: text.find("[")])
                return _assemble(actions, thought, repaired or rep)
    spans = _find_objects(text)
    actions: list[tuple[str, dict[str, Any], str]] = []
    errors: list[str] = []
    seen_json = False
    for s, e in spans:
        value, rep, err = _loads(text[s:e])
        if isinstance(value, dict):
            seen_json = True
            found = _action_from_object(value)
            if found is None:
                continue
            name, args, rep2 = found
            if not actions:
                thought = thought or _thought_from_object(value) or _prose_thought(text[:s])
            actions.append((name, args, ""))
            repaired = repaired or rep or rep2
        elif err:
            errors.append(f"invalid JSON at character {s}: {err}")
    if actions:
        return _assemble(actions, thought, repaired)
    if errors:
        raise _ParseFailure(errors[0])
    if seen_json:
        raise _ParseFailure('found a JSON object but it has no "action" key naming a tool (or "finish")')
    raise _ParseFailure(
        'found no `Action:` line, no `Final Answer:` line and no JSON object with an "action" key'
    )


def _label_kind(label: str) -> str:
    low = re.sub(r"[ _]", "", label.lower())
    return {"actioninput": "input", "finalanswer": "final"}.get(low, low)


def _parse_react(text: str, labels: list[re.Match[str]]) -> ParsedOutput:
    sections = []
    for i, m in enumerate(labels):
        end = labels[i + 1].start() if i + 1 < len(labels) else len(text)
        kind = _label_kind(m.group("label"))
        canonical = m.group(0).strip() == _CANONICAL_LABELS.get(kind, "")
        sections.append((kind, m, text[m.end() : end].strip(), canonical))
    first = next(i for i, s in enumerate(sections) if s[0] in ("action", "final"))
    kind, m, content, canonical = sections[first]
    repaired = not canonical

    thought_section = next((s for s in reversed(sections[:first]) if s[0] == "thought"), None)
    if thought_section is None:
        thought = _prose_thought(text[: labels[0].start()])
    else:
        thought = thought_section[2]
        repaired = repaired or not thought_section[3]

    if kind == "final":
        answer = text[m.end() :].strip()
        if not answer:
            raise _ParseFailure("`Final Answer:` is empty")
        return ParsedOutput(
            ParseStatus.REPAIRED if repaired else ParseStatus.OK, thought=thought or None, final_answer=answer
        )

    # LangChain's structured-chat dialect puts a JSON blob after `Action:`.
    if _strip_fence(content).startswith("{"):
        return _parse_json(content, thought=thought or None, repaired=True)

    first_line, _, rest = content.partition("\n")
    cleaned = first_line.strip().strip("`*\"' ")
    name_match = _NAME_RE.match(cleaned)
    if not name_match:
        raise _ParseFailure("`Action:` must be followed by a tool name")
    name = name_match.group(0)
    if not _is_finish(name):
        name = name.split(" ")[0]  # a second word is only allowed in "Final Answer"
    inline = cleaned[len(name) :].strip().strip("()[]").strip()
    repaired = repaired or name != first_line.strip()

    following = sections[first + 1] if first + 1 < len(sections) else None
    if following is not None and following[0] == "input":
        args_text = following[2]
        repaired = repaired or not following[3]
        consumed = first + 2
    else:
        args_text = "\n".join(p for p in (inline, rest.strip()) if p)
        repaired = repaired or bool(args_text)
        consumed = first + 1
    if consumed < len(sections):  # an invented Observation, a second action...: ignored
        repaired = True
    args, rep = _args_from_text(args_text)
    return _assemble([(name, args, args_text)], thought or None, repaired or rep)


def parse_text(text: str | None) -> ParsedOutput:
    """Parse a text completion (ReAct lines or JSON). Never raises."""
    try:
        if text is None or not str(text).strip():
            return _unparsable("the output is empty")
        text = str(text)
        labels = list(_LABEL_RE.finditer(text))
        if any(_label_kind(m.group("label")) in ("action", "final") for m in labels):
            return _parse_react(text, labels)
        return _parse_json(text)
    except _ParseFailure as exc:
        return _unparsable(str(exc))
    except Exception as exc:  # a parser bug must not crash the loop; the model just retries
        return _unparsable(f"the output could not be parsed ({type(exc).__name__}: {exc})")


# --------------------------------------------------------------------------------------------
# Function-calling mode
# --------------------------------------------------------------------------------------------


def _bad_arguments(call: ToolCall) -> str | None:
    """Why a provider tool call's arguments are unusable, or None when they are fine."""
    if set(call.arguments) != {RAW_KEY}:
        return None
    raw = call.arguments[RAW_KEY]
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            return f"arguments of tool call {call.name!r} are not valid JSON ({exc}): {raw[:200]!r}"
        return f"arguments of tool call {call.name!r} must be a JSON object, got {type(value).__name__}"
    return f"arguments of tool call {call.name!r} must be a JSON object, got {type(raw).__name__}"


def parse_response(response: LLMResponse, *, text_is_final: bool = False) -> ParsedOutput:
    """Parse one LLM response: its `tool_calls` when present, else its text. Never raises.

    `text_is_final` is for native function-calling agents, where a reply without tool calls is
    the answer: plain text that is not in the ReAct/JSON format then becomes the final answer."""
    try:
        thought = (response.text or "").strip() or None
        if response.format_error:
            return _unparsable(response.format_error, thought=thought)
        if response.tool_calls:
            return _parse_tool_calls(response, thought)
        parsed = parse_text(response.text)
        cut_off = response.finish_reason in _CUT_OFF_REASONS
        if cut_off and parsed.status == ParseStatus.REPAIRED:
            # Repairing a cut-off output completes it with a guess (a truncated tool name, half
            # an argument); acting on that is worse than asking again.
            return _unparsable(f"{_CUT_OFF_MESSAGE}; the partial output was not used", thought=None)
        if parsed.status == ParseStatus.UNPARSABLE:
            if text_is_final and thought and not cut_off:
                return ParsedOutput(ParseStatus.OK, final_answer=thought)
            if cut_off:
                parsed.error = f"{parsed.error} ({_CUT_OFF_MESSAGE})"
        return parsed
    except Exception as exc:
        return _unparsable(f"the response could not be parsed ({type(exc).__name__}: {exc})")


def _parse_tool_calls(response: LLMResponse, thought: str | None) -> ParsedOutput:
    errors = []
    actions: list[tuple[str, dict[str, Any], str]] = []
    ids: list[str] = []
    for i, call in enumerate(response.tool_calls):
        if not call.name or not call.name.strip():
            errors.append(f"tool call #{i} has no function name")
            continue
        problem = _bad_arguments(call)
        if problem:
            errors.append(problem)
            continue
        actions.append((call.name, call.arguments, ""))
        ids.append(call.id or make_call_id(i, call.name, call.arguments))
    if errors:
        return _unparsable("; ".join(errors), thought=thought)
    try:
        # Provider tool names are exact: only a function literally named "finish" finishes.
        parsed = _assemble(actions, thought, repaired=False, is_finish=_is_exact_finish)
    except _ParseFailure as exc:
        return _unparsable(str(exc), thought=thought)
    # Keep the provider's ids: the tool results must be sent back under them.
    tool_ids = [cid for (name, _, _), cid in zip(actions, ids, strict=True) if not _is_exact_finish(name)]
    for call, cid in zip(parsed.calls, tool_ids, strict=True):
        call.id = cid
    return parsed
