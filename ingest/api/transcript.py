"""A session turn's transcript: what the user said and what the agent answered, as plain text.

Why best effort over several places: every client records a run's input and answer differently.
Our kernel puts `steplens.run.task` / `.answer` on the run span; OpenInference `input.value` /
`output.value` on its top span; Traceloop `traceloop.entity.input` / `.output`; the Langfuse SDK
`langfuse.observation.input` / `.output` (a decorated function's `{"args": [...], "kwargs": {...}}`:
its first text argument is what was asked); the OTel GenAI
conventions the messages on the LLM calls (`gen_ai.input.messages`, `gen_ai.output.messages`) or
in logged events (`gen_ai.user.message`, `gen_ai.choice`, inference details). The first place
that has text wins, top span first; a run that recorded no content (capture off) has none.
"""

from __future__ import annotations

import json
from typing import Any

from tracer import conventions as c

MAX_CHARS = 4000  # a transcript line is for reading; the trace page has the full content

_ROOT_INPUT = (c.RUN_TASK, c.OI_INPUT_VALUE, c.TRACELOOP_ENTITY_INPUT, c.LANGFUSE_OBSERVATION_INPUT,
               c.GEN_AI_INPUT_MESSAGES)  # fmt: skip
_ROOT_OUTPUT = (c.RUN_ANSWER, c.OI_OUTPUT_VALUE, c.TRACELOOP_ENTITY_OUTPUT, c.LANGFUSE_OBSERVATION_OUTPUT,
                c.GEN_AI_OUTPUT_MESSAGES)  # fmt: skip
_LLM_INPUT = (c.GEN_AI_INPUT_MESSAGES, c.OI_INPUT_VALUE)
_LLM_OUTPUT = (c.GEN_AI_OUTPUT_MESSAGES, c.OI_OUTPUT_VALUE)
_TEXT_FIELDS = ("content", "text", "input", "output", "query", "question", "answer", "result")


def _cut(text: str | None) -> str | None:
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + "…"


def _parts_text(content: Any) -> str | None:
    """A message's content: a string, or a list of parts ({type: text, content|text})."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p if isinstance(p, str) else (p.get("content") or p.get("text")) for p in content
                 if isinstance(p, str) or (isinstance(p, dict) and p.get("type", "text") == "text")]  # fmt: skip
        joined = "\n".join(t for t in texts if isinstance(t, str))
        return joined or None
    return None


def _message_text(messages: list[Any], role: str) -> str | None:
    """The text of the last message with `role` (user for an input, assistant for an answer)."""
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        inner = message.get("message") if isinstance(message.get("message"), dict) else message
        if inner.get("role", role) != role:
            continue
        text = _parts_text(inner.get("parts")) or _parts_text(inner.get("content"))
        if text:
            return text
    return None


def _value_text(value: Any, role: str) -> str | None:
    """Text out of an attribute value: plain text as is, JSON messages or a JSON object's text field."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return _message_text(value, role)
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list):
            return _message_text(value["messages"], role)
        if isinstance(value.get("args"), list) and isinstance(value.get("kwargs", {}), dict):  # a decorated call
            texts = [a for a in (*value["args"], *value.get("kwargs", {}).values()) if isinstance(a, str)]
            return texts[0] if texts else None
        for key in _TEXT_FIELDS:
            if isinstance(value.get(key), str):
                return value[key]
        return json.dumps(value, ensure_ascii=False)
    return None if value is None else str(value)


def _first(attrs: dict[str, Any], keys: tuple[str, ...], role: str) -> str | None:
    for key in keys:
        text = _cut(_value_text(attrs.get(key), role))
        if text:
            return text
    return None


def _logged(logs: list[dict[str, Any]], role: str) -> str | None:
    """The first user message (role user) or the last answer (role assistant) the client logged."""
    ordered = logs if role == "user" else list(reversed(logs))
    for row in ordered:
        name = row["event_name"]
        if name == c.GEN_AI_EVENT_INFERENCE_DETAILS:
            text = _value_text(row["input_messages" if role == "user" else "output_messages"], role)
        elif role == "user" and c.GEN_AI_INPUT_MESSAGE_EVENTS.get(name) == "user":
            text = _value_text(row["body"], role)
        elif role == "assistant" and name == c.GEN_AI_EVENT_CHOICE:
            body = row["body"]
            body = json.loads(body) if isinstance(body, str) else body
            text = _value_text([body.get("message", body)] if isinstance(body, dict) else body, role)
        else:
            continue
        if _cut(text):
            return _cut(text)
    return None


def turn_text(content: dict[str, Any]) -> tuple[str | None, str | None]:
    """(the user's input, the agent's answer) of one turn from `turn_content`'s entry for its trace."""
    root, first, last, logs = content["root"], content["first_llm"], content["last_llm"], content["logs"]
    said = _first(root, _ROOT_INPUT, "user") or _first(first, _LLM_INPUT, "user") or _logged(logs, "user")
    answered = (_first(root, _ROOT_OUTPUT, "assistant") or _first(last, _LLM_OUTPUT, "assistant")
                or _logged(logs, "assistant"))  # fmt: skip
    return said, answered
