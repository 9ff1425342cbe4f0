"""`GET /api/diff?a=&b=`: two runs aligned step by step, the first divergence, and b - a deltas."""

import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from ingest.api.access import ReadAccess
from ingest.api.analytics_models import Delta, Diff
from ingest.api.analytics_params import DiffParams
from ingest.api.diffing import align, run_steps
from ingest.api.execute import ReadableStore, run_read
from ingest.api.models import Run
from ingest.store.backend import QueryNamespace, queries_of

_TRACE_ID = re.compile(r"^[0-9a-fA-F]{32}$")


def _load(
    cur: Any, trace_id: str, projects: frozenset[str] | None, queries: QueryNamespace
) -> tuple[dict | None, list[dict]]:
    """The run of `trace_id` and its step/tool spans, read with the store's own queries."""
    runs = queries.runs.find_runs_by_trace(cur, trace_id, projects)
    if not runs:
        return None, []
    run = runs[0]
    return run, queries.diff.step_spans(cur, trace_id, run["project"], run["span_start"], run["span_end"])


def _num(value: Any) -> float:
    return float(value) if value is not None else 0.0


def add_diff_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get(
        "/diff",
        response_model=Diff,
        summary="Step-aligned diff of two runs: first divergence (action, arguments, observation) and deltas",
        responses={400: {"description": "not a 32-hex-char trace id"}, 404: {"description": "unknown trace"}},
    )
    def get_diff(params: Annotated[DiffParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]) -> Diff:
        for name, value in (("a", params.a), ("b", params.b)):
            if not _TRACE_ID.match(value):
                raise HTTPException(400, f"{name} must be a trace id of 32 hexadecimal characters")
        a_id, b_id = params.a.lower(), params.b.lower()
        projects = access.narrow(params.project)
        queries = queries_of(store)
        (run_a, rows_a), (run_b, rows_b) = run_read(
            store, lambda cur: (_load(cur, a_id, projects, queries), _load(cur, b_id, projects, queries)), timeout_s
        )
        for name, tid, run in (("a", a_id, run_a), ("b", b_id, run_b)):
            if run is None:
                raise HTTPException(404, f"trace {tid} ({name}) not found")
        steps_a, steps_b = run_steps(rows_a), run_steps(rows_b)
        steps, first = align(steps_a, steps_b)
        warnings = []
        if run_a["agent"] != run_b["agent"]:
            warnings.append(f"the runs are of different agents ({run_a['agent']!r} vs {run_b['agent']!r})")
        if not steps_a and not steps_b:
            warnings.append("neither run has step or tool spans to align")
        count_a = run_a["steps"] if run_a["steps"] is not None else len(steps_a)
        count_b = run_b["steps"] if run_b["steps"] is not None else len(steps_b)
        return Diff(
            a=Run.model_validate(run_a),
            b=Run.model_validate(run_b),
            first_divergence=first,
            steps=steps,
            delta=Delta(
                steps=count_b - count_a,
                input_tokens=int(_num(run_b["input_tokens"]) - _num(run_a["input_tokens"])),
                output_tokens=int(_num(run_b["output_tokens"]) - _num(run_a["output_tokens"])),
                cost_usd=_num(run_b["cost_usd"]) - _num(run_a["cost_usd"]),
            ),
            warnings=warnings,
        )
