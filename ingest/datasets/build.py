"""One stored run -> one eval case, in the JSONL format `steplens eval run` reads (kernel/eval/dataset.py):

    {"id": "ops-4bf92f3577b34da6", "category": "ops", "task": "...",
     "expect": {"answer_contains": ["..."], "tools_sequence": ["query_order", "resolve_ticket"],
                "forbidden_tools": [...], "ok": true},
     "source": {"trace_id": "...", "project": "...", "agent": "ops", "version": "v2", "expected_from": "answer"}}

Why the expected answer is a reviewer's correction before the run's own answer: a run worth keeping
is often one that went wrong, and what it should have said is what the reviewer wrote (a score named
`correction`: its comment, else its label). A run with neither (it failed, nobody corrected it) is
skipped with that reason rather than saved as a case that expects nothing.
Why the tools that succeeded, in order: that is the path that produced the expected answer;
`tools_sequence` allows other calls in between, so a case does not fail on one extra lookup.
Content (task, answer) is read from the run span's attributes, so a run recorded with content
capture off has no task and is skipped.
"""

from __future__ import annotations

import json
from typing import Any

from ingest.datasets.model import MAX_DATASET_RUNS, DatasetIn, Skipped
from ingest.store.backend import queries_of
from ingest.store.work import DUCKDB_WORK, work_of
from tracer.conventions import RUN_ANSWER, RUN_TASK, TOOL_DECISION, OperationClass, ToolDecision

TaskCase = dict[str, Any]


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    raw = span.get("attributes")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, dict) else {}


def _correction(scores: list[dict[str, Any]], name: str) -> str | None:
    """The latest correction score's comment, else its label (categorical); scores are oldest first."""
    for score in reversed(scores):
        if score.get("name") != name:
            continue
        label = score.get("label") if score.get("data_type") == "categorical" else None
        text = score.get("comment") or label
        if isinstance(text, str) and text.strip():
            return text.strip()
    return None


def _tools(spans: list[dict[str, Any]], mode: str) -> dict[str, list[str]]:
    calls = [s for s in spans if s.get("operation") == OperationClass.TOOL.value and s.get("tool_name")]
    if mode == "set":
        return {"tools_set": sorted({str(s["tool_name"]) for s in calls})}
    if mode == "sequence":
        done = [
            str(s["tool_name"]) for s in calls
            if s.get("status") != "ERROR" and not s.get("error_type")
            and _attributes(s).get(TOOL_DECISION, ToolDecision.EXECUTED.value) == ToolDecision.EXECUTED.value
        ]
        return {"tools_sequence": done}
    return {}


def case_of(run: dict[str, Any], spans: list[dict[str, Any]], scores: list[dict[str, Any]],
            request: DatasetIn) -> TaskCase | str:
    """The eval case of one run, or why it cannot be one."""
    root = next((s for s in spans if s.get("span_id") == run.get("root_span_id")), None)
    attrs = _attributes(root) if root is not None else {}
    task = attrs.get(RUN_TASK)
    if not isinstance(task, str) or not task.strip():
        return "no task recorded on the run span (content capture off, or a client that records none)"
    expected, expected_from = None, "none"
    if request.expected in ("correction_or_answer", "correction"):
        expected = _correction(scores, request.correction_score)
        expected_from = "correction" if expected else "none"
    if expected is None and request.expected in ("correction_or_answer", "answer"):
        answer = attrs.get(RUN_ANSWER)
        if run.get("ok") and isinstance(answer, str) and answer.strip():
            expected, expected_from = answer.strip(), "answer"
    if expected is None and request.expected != "none":
        return (f"no {request.correction_score!r} score on the run" if request.expected == "correction"
                else "the run has no answer (it failed or content capture was off) and no reviewer's correction")
    expect: dict[str, Any] = {"answer_contains": [expected] if expected else [], "ok": True}
    if expected_from != "correction":  # a corrected run went the wrong way: its tools are not the expectation
        expect.update(_tools(spans, request.tools))
    if request.forbidden_tools:
        expect["forbidden_tools"] = list(request.forbidden_tools)
    agent = run.get("agent")
    return {
        "id": f"{agent or 'run'}-{run['trace_id'][:16]}",
        "category": agent or "uncategorised",
        "task": task.strip(),
        "expect": expect,
        "source": {"trace_id": run["trace_id"], "project": run["project"], "agent": agent,
                   "version": run.get("version"), "expected_from": expected_from},
    }


class QueueNotFound(LookupError):
    """The request names an annotation queue the key's project does not have."""


def queue_trace_ids(cur: Any, project: str, name: str, work: Any = DUCKDB_WORK) -> list[str]:
    """The runs people labelled (not only skipped) in queue `name` of `project`, by trace id."""
    queue = work.queue_table.get(cur, project, name)
    if queue is None:
        raise QueueNotFound(f"no annotation queue {name!r} in project {project!r}")
    return sorted(work.queue_results.results(cur, queue).labels)[:MAX_DATASET_RUNS]


def selected_trace_ids(cur: Any, request: DatasetIn, run_filters: Any, project: str, store: object = None) -> list[str]:
    """The trace ids the request selects, in its order (`project`: the caller's, where a named queue
    is looked up; QueueNotFound when it has none). `store`: whose queries to run (DuckDB's if None)."""
    if request.queue is not None:
        return queue_trace_ids(cur, project, request.queue, work_of(store))
    if request.trace_ids is not None:
        return list(request.trace_ids)
    assert request.filter is not None
    page = queries_of(store).runs.list_runs(cur, run_filters, sort=request.filter.sort, order=request.filter.order,
                     limit=request.filter.limit)
    return [r["trace_id"] for r in page.rows]


def cases_of(cur: Any, trace_ids: list[str], request: DatasetIn, projects: frozenset[str] | None,
             store: object = None) -> tuple[list[TaskCase], list[Skipped]]:
    """The cases of these runs, in order, and the runs skipped with their reasons (a trace id naming
    no readable run too). Callers pass a few dozen ids per read, so each read stays within the
    query time limit however large the dataset."""
    queries = queries_of(store)
    cases: list[TaskCase] = []
    skipped: list[Skipped] = []
    for trace_id in trace_ids:
        found = queries.runs.find_runs_by_trace(cur, trace_id, projects)
        if not found:
            skipped.append(Skipped(trace_id=trace_id, reason="no run with this trace id in your projects"))
            continue
        run = found[0]
        spans = queries.traces.trace_spans(cur, run["trace_id"], run["project"], run["span_start"], run["span_end"],
                            run["span_count"]).rows
        scores = queries.scores.scores_of_trace(cur, frozenset({run["project"]}), run["trace_id"])
        case = case_of(run, spans, scores, request)
        if isinstance(case, str):
            skipped.append(Skipped(trace_id=run["trace_id"], reason=case))
        else:
            cases.append(case)
    return cases, skipped
