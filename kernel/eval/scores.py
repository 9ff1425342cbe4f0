"""An evaluation's verdicts as scores on the runs it produced (`POST /api/scores`, source `eval`).

Why scores and not only the results file: the runs of `steplens eval run --endpoint` are stored
next to production runs (mode eval); with each case's verdict attached to its run, an experiment's
pass rate is a score like any other (GET /api/scores, the regressions and runs pages), comparable
with a reviewer's `correct` on live traffic. The results file stays the offline record.

The kernel never imports ingest: this is an HTTP client of the server's API, with the same API key
as the spans (`STEPLENS_API_KEY`; a key with the `annotate` scope, or `admin`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from kernel.eval.results import EvalRun

SCORE_NAME = "eval_passed"
SCORE_SOURCE = "eval"
SCORES_PATH = "/api/scores"
BATCH = 1000  # most scores one POST /api/scores takes
MAX_COMMENT = 10_000


@dataclass(frozen=True)
class Posted:
    """What happened to an evaluation's scores: how many the server accepted, and why not all."""

    accepted: int
    error: str | None = None


def case_scores(run: EvalRun, name: str = SCORE_NAME) -> list[dict[str, Any]]:
    """One boolean score per case that has a run (a trace id): passed or not, the failed checks as
    the comment, the evaluation's identity in the metadata."""
    out = []
    for case in run.cases:
        if not case.trace_id:
            continue
        comment = "; ".join(case.failures)[:MAX_COMMENT] or None
        out.append({
            "trace_id": case.trace_id, "name": name, "value": case.passed, "data_type": "boolean",
            "source": SCORE_SOURCE, "author": f"steplens eval run {run.run_id}", "comment": comment,
            "created_at": run.started_at.isoformat(),
            "metadata": {"eval_run_id": run.run_id, "case_id": case.case_id, "category": case.category,
                         "dataset": run.dataset, "dataset_sha256": run.dataset_sha256, "agent": run.agent,
                         "version": run.version, "stop_reason": case.stop_reason, "steps": case.steps},
        })
    return out


def _why(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text
    hint = " (the API key needs the annotate or admin scope)" if response.status_code in (401, 403) else ""
    return f"{SCORES_PATH} answered {response.status_code}: {str(detail)[:500]}{hint}"


def post_case_scores(base_url: str, run: EvalRun, api_key: str | None = None, timeout_s: float = 30.0,
                     name: str = SCORE_NAME) -> Posted:
    """POST every case's score; never raises: a server that refuses or is gone is an error string."""
    scores = case_scores(run, name)
    headers = {"x-api-key": api_key} if api_key else {}
    accepted = 0
    try:
        with httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s) as client:
            for i in range(0, len(scores), BATCH):
                response = client.post(SCORES_PATH, json={"scores": scores[i:i + BATCH]})
                if response.status_code != 200:
                    return Posted(accepted, _why(response))
                accepted += int(response.json().get("accepted", 0))
    except httpx.HTTPError as exc:
        return Posted(accepted, f"{SCORES_PATH} could not be reached ({type(exc).__name__}: {exc})")
    return Posted(accepted)
