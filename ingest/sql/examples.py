"""Example queries `GET /api/sql/views` offers (the SQL page opens on the first one).

Why on the server: the dashboards write no SQL (design.md §1); the examples are also what the
README's SQL section shows, so they are kept runnable by a test against a real server.
"""

from __future__ import annotations

from tracer import conventions as c

EXAMPLES: tuple[tuple[str, str], ...] = (
    (
        "Runs, steps and cost per day and agent",
        "SELECT date_trunc('day', start_time) AS day, agent, count(*) AS runs,\n"
        "       avg(steps) AS mean_steps, sum(cost_usd) AS cost_usd\n"
        "FROM runs\nGROUP BY ALL\nORDER BY day, agent",
    ),
    (
        "Tool latency and errors",
        "SELECT tool_name, count(*) AS calls, count_if(is_error) AS errors,\n"
        "       quantile_cont(duration_ms, 0.5) AS p50_ms, quantile_cont(duration_ms, 0.95) AS p95_ms\n"
        "FROM tool_calls\nGROUP BY tool_name\nORDER BY calls DESC",
    ),
    (
        "Failed runs by stop reason and version",
        "SELECT stop_reason, version, count(*) AS runs\nFROM runs\nWHERE NOT ok\nGROUP BY ALL\nORDER BY runs DESC",
    ),
    (
        "LLM calls per model: tokens and latency",
        "SELECT model, count(*) AS calls, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,\n"
        "       quantile_cont(duration_ms, 0.95) AS p95_ms\n"
        "FROM spans\nWHERE operation = 'llm'\nGROUP BY model\nORDER BY calls DESC",
    ),
    (
        "Tool calls by their arguments (an attribute)",
        f"SELECT tool_name, attributes->>'$.\"{c.GEN_AI_TOOL_CALL_ARGUMENTS}\"' AS arguments, count(*) AS calls\n"
        "FROM spans\nWHERE operation = 'tool'\nGROUP BY ALL\nORDER BY calls DESC\nLIMIT 20",
    ),
)
