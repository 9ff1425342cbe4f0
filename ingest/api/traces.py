"""`GET /api/traces/{trace_id}`: one run and all its spans as a flat list in tree order, each span
with the OTLP log records keyed to it (GenAI events), plus the trace's evaluation results and scores.

Unknown traces and traces of projects the caller may not read get the same 404, so an API key
cannot probe whether another project's trace exists.
"""


import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Response

from ingest.api.access import ReadAccess
from ingest.api.execute import ReadableStore, run_read
from ingest.api.json_answer import model_response
from ingest.api.models import Evaluation, LogEntry, Run, Span, Trace
from ingest.api.params import TraceParams
from ingest.api.tree import order_as_tree
from ingest.store.backend import DUCKDB_QUERIES, QueryNamespace, queries_of
from tracer.conventions import GEN_AI_EVENT_EVALUATION_RESULT

_TRACE_ID = re.compile(r"^[0-9a-fA-F]{32}$")


def load_trace(
    cur: Any, trace_id: str, projects: frozenset[str] | None, queries: QueryNamespace = DUCKDB_QUERIES
) -> tuple[dict | None, list[dict]]:
    """The run row and span rows of a trace; (None, []) when no readable run has this id.

    The store writes a trace's runs row in the same transaction as its spans, so "no run row"
    means "no such trace" and a 404 never costs a full scan of the spans table.
    """
    runs = queries.runs.find_runs_by_trace(cur, trace_id, projects)
    if not runs:
        return None, []
    run = runs[0]
    spans = queries.traces.trace_spans(cur, trace_id, run["project"], run["span_start"], run["span_end"], run["span_count"])
    return run, spans.rows


def load_trace_with_logs(
    cur: Any, trace_id: str, projects: frozenset[str] | None, queries: QueryNamespace = DUCKDB_QUERIES
) -> tuple[dict | None, list[dict], list[dict]]:
    """`load_trace` plus the trace's log records (GenAI events, evaluations)."""
    run, rows = load_trace(cur, trace_id, projects, queries)
    if run is None:
        return None, [], []
    run["scores_list"] = queries.scores.scores_of_trace(cur, frozenset({run["project"]}), trace_id)
    queries.scores.latest_values(cur, [run])
    return run, rows, queries.logs.trace_logs(cur, trace_id, run["project"])


def build_trace(trace_id: str, run: dict, span_rows: list[dict], log_rows: list[dict]) -> Trace:
    """The Trace answer: spans in tree order, each with its log records; the rest at trace level.

    Log records join their span here, at read time, so whichever arrived first the answer is the same.
    """
    spans = [Span.model_validate(r) for r in order_as_tree(span_rows)]
    by_id = {s.span_id: s for s in spans}
    orphans: list[LogEntry] = []
    evaluations: list[Evaluation] = []
    for row in log_rows:
        entry = LogEntry.model_validate(row)
        span = by_id.get(row["span_id"]) if row["span_id"] else None
        (span.logs if span is not None else orphans).append(entry)
        if row["event_name"] == GEN_AI_EVENT_EVALUATION_RESULT:
            evaluations.append(
                Evaluation(
                    span_id=row["span_id"], time=row["time"], name=row["eval_name"],
                    score_value=row["eval_score_value"], score_label=row["eval_score_label"],
                    explanation=row["eval_explanation"], attributes=entry.attributes,
                )
            )
    scores = run.pop("scores_list", [])
    return Trace(trace_id=trace_id, run=Run.model_validate(run), spans=spans, logs=orphans, evaluations=evaluations,
                 scores=scores)


def add_trace_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get(
        "/traces/{trace_id}",
        response_model=Trace,
        summary="A trace: its run and every span, parents before children, siblings by start time",
        responses={400: {"description": "not a 32-hex-char trace id"}, 404: {"description": "unknown trace"}},
    )
    def get_trace(
        trace_id: str,
        params: Annotated[TraceParams, Query()],
        access: Annotated[ReadAccess, Depends(read_access)],
    ) -> Response:
        if not _TRACE_ID.match(trace_id):
            raise HTTPException(400, f"trace id must be 32 hexadecimal characters, got {len(trace_id)} characters")
        tid = trace_id.lower()
        projects = access.narrow(params.project)
        run, rows, logs = run_read(store, lambda cur: load_trace_with_logs(cur, tid, projects, queries_of(store)), timeout_s)
        if run is None:
            raise HTTPException(404, f"trace {tid} not found")
        # serialized in the route's thread: no second hop to validate it again (ingest/api/json_answer.py)
        return model_response(build_trace(tid, run, rows, logs))
