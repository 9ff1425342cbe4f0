"""The columns a filter may name: the promoted columns of runs and spans, each with its SQL type.

Why an allow-list: a column name is the one part of a filter that becomes SQL text rather than a
parameter, so only names listed here ever reach a query; anything else is refused with its position.
"""

from __future__ import annotations

from enum import StrEnum

from tracer import conventions


class Kind(StrEnum):
    """How a column compares: literals are checked against it (a number for a number column...)."""

    TEXT = "text"
    NUMBER = "number"
    BOOL = "bool"
    TIME = "time"
    LIST = "list"  # VARCHAR[]: `=`/`in`/`contains` test its elements


T, N, B, TM, L = Kind.TEXT, Kind.NUMBER, Kind.BOOL, Kind.TIME, Kind.LIST

# Promoted span columns (ingest/schema.py SPANS_DDL and later migrations).
SPAN_COLUMNS: dict[str, Kind] = {
    "trace_id": T, "span_id": T, "parent_span_id": T, "service": T, "scope": T, "name": T, "kind": T,
    "start_time": TM, "end_time": TM, "duration_ms": N, "status": T, "status_message": T, "operation": T,
    "agent_name": T, "agent_version": T, "agent_id": T, "model": T, "response_model": T, "provider": T,
    "input_tokens": N, "output_tokens": N, "cache_read_tokens": N, "cache_creation_tokens": N,
    "reasoning_tokens": N, "cost_usd": N, "cost_source": T, "tool_name": T, "error_type": T, "step_index": N,
    "stop_reason": T, "run_ok": B, "run_steps": N, "conversation_id": T, "user_id": T, "environment": T,
    "run_mode": T, "tool_decision": T, "observation_tokens": N, "dropped_tokens": N, "truncated": B,
    "error_template": T, "time_to_first_chunk_ms": N, "stream": B,
}  # fmt: skip

# Promoted run columns (ingest/schema.py RUNS_DDL and later migrations); `models` is a list.
RUN_COLUMNS: dict[str, Kind] = {
    "trace_id": T, "name": T, "agent": T, "version": T, "service": T, "environment": T, "user_id": T,
    "conversation_id": T, "mode": T, "start_time": TM, "end_time": TM, "duration_ms": N, "ok": B,
    "stop_reason": T, "steps": N, "llm_calls": N, "tool_calls": N, "tool_errors": N, "error_spans": N,
    "input_tokens": N, "output_tokens": N, "cost_usd": N, "models": L, "failure_signature": T,
    "eval_run_id": T, "eval_case_id": T, "span_count": N, "stop_reason_source": T, "failure_evidence": T,
}  # fmt: skip

# Attribute keys normalization copies into a span column unchanged whenever the attribute is a
# non-empty string (ingest/normalize/span.py: the first key of TOOL_NAME_KEYS / AGENT_NAME_KEYS wins).
# `attributes[key] = "v"` (or `in`) then needs `column = "v"`, a column test with zone maps and no JSON
# parsing, as a pre-filter ahead of the exact JSON check (ingest/filters/compile.py says when it holds).
PROMOTED_ATTRIBUTES: dict[str, str] = {
    conventions.GEN_AI_TOOL_NAME: "tool_name",
    conventions.GEN_AI_AGENT_NAME: "agent_name",
}
