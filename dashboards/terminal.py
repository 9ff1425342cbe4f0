"""`steplens trace show ID`: a trace as a tree in the terminal (rich).

Why it lives with the dashboards: it is the same read of the same query API answer as the Trace
page (dashboards.trace_view), only drawn with rich instead of Streamlit, and it fetches through
the same client, so the key, the errors and their wording are the same.
"""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from dashboards.client import ApiError, QueryClient
from dashboards.config import DEFAULT_API
from dashboards.models import Span, Trace
from dashboards.trace_view import as_text, truncation_marks, truthy
from tracer import conventions as c

CONTENT_PREVIEW_CHARS = 160
DEFAULT_MAX_SPANS = 2000


def _short(text: str | None, limit: int = CONTENT_PREVIEW_CHARS) -> str:
    if not text:
        return ""
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def span_label(span: Span) -> str:
    """One line per span: name, duration, and the facts of its kind (model/tokens, tool/decision)."""
    a = span.attributes
    parts = [f"[bold]{escape(span.name)}[/]", f"[dim]{span.duration_ms:.1f} ms[/]"]
    if span.operation == c.OperationClass.LLM:
        parts.append(escape(f"{span.model or ''} in={span.input_tokens or 0} out={span.output_tokens or 0}"))
    if span.operation == c.OperationClass.TOOL and a.get(c.TOOL_DECISION):
        parts.append(escape(f"decision={a[c.TOOL_DECISION]}"))
    if span.cost_usd:
        parts.append(f"${span.cost_usd:.6f}")
    if span.operation == c.OperationClass.STEP and a.get(c.STEP_ACTION):
        parts.append(escape(f"action={a[c.STEP_ACTION]}"))
    if span.is_error:
        parts.append(f"[bold red]ERROR {escape(span.error_type or '')} {escape(span.status_message or '')}[/]")
    return "  ".join(parts)


def _content_lines(span: Span) -> list[str]:
    a = span.attributes
    lines = []
    for label, key in (("thought", c.STEP_THOUGHT), ("arguments", c.GEN_AI_TOOL_CALL_ARGUMENTS),
                       ("observation", c.STEP_OBSERVATION)):
        text = as_text(a.get(key))
        if text:
            mark = " [yellow](truncated)[/]" if truncation_marks(text) else ""
            lines.append(f"[cyan]{label}:[/] {escape(_short(text))}{mark}")
    if span.operation == c.OperationClass.TRUNCATE and truthy(a.get(c.TRUNCATE_TRUNCATED)):
        lines.append(f"[yellow]truncated: {a.get(c.TRUNCATE_DROPPED_TOKENS, '?')} tokens dropped[/]")
    return lines


def render_trace(trace: Trace, max_spans: int = DEFAULT_MAX_SPANS) -> Tree:
    """The trace as a rich Tree: the run at the root, then spans by parent, in the API's order."""
    run = trace.run
    status = "[green]ok[/]" if run.ok else f"[bold red]failed: {escape(run.stop_reason or '?')}[/]"
    head = (
        f"[bold]{escape(run.name or run.agent or 'run')}[/] {escape(trace.trace_id)}  {status}  "
        f"steps={run.steps or 0} tokens={run.input_tokens or 0}/{run.output_tokens or 0} "
        f"cost=${(run.cost_usd or 0):.6f} {(run.duration_ms or 0):.0f} ms"
    )
    tree = Tree(head)
    nodes: dict[str, Tree] = {}
    shown = trace.spans[:max_spans]
    for span in shown:
        parent = nodes.get(span.parent_span_id or "", tree)
        node = parent.add(span_label(span))
        for line in _content_lines(span):
            node.add(line)
        nodes[span.span_id] = node
    if len(trace.spans) > len(shown):
        tree.add(f"[yellow]… {len(trace.spans) - len(shown)} more spans not shown (use --max-spans)[/]")
    return tree


def show_trace(
    trace_id: str,
    api: str = DEFAULT_API,
    api_key: str | None = None,
    console: Console | None = None,
    max_spans: int = DEFAULT_MAX_SPANS,
    err_console: Console | None = None,
) -> int:
    """Print the trace; returns the exit code (0 shown, 1 API error, 2 unknown trace)."""
    console = console or Console()
    err = err_console or Console(stderr=True)
    key = api_key if api_key is not None else os.environ.get("STEPLENS_API_KEY") or None
    with QueryClient(api, key, cache_ttl_s=0) as client:
        try:
            trace = client.trace(trace_id)
        except ApiError as exc:
            err.print(f"[bold red]error:[/] {escape(exc.message)}")
            return 2 if exc.status == 404 else 1
    console.print(render_trace(trace, max_spans=max_spans))
    return 0
