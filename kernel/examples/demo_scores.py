"""The demo history's quality signals: what a reviewer and a judge model said about its runs.

Why the demo writes scores: every page built on scores (the runs' scores, the trace page, the
regressions and alerts on `score:` metrics, annotation queues, datasets from traces) must have
data on `make run`, and the release comparison must have a planted quality drop to find.

What is written, each decided by (seed, run index) alone, through `POST /api/scores`:

| score | type | source | on | planted |
|---|---|---|---|---|
| `helpfulness` | numeric 1-5 | judge (`demo-judge`) | every run | ops v2 answers less helpfully (about -20%) |
| `correct` | boolean | human (a reviewer) | an 80% sample of live runs | ops v2: about 84% -> 53% judged correct |
| `tone` | categorical friendly / neutral / curt | judge | every run | ops v2 is curt 4x as often |

A failed run is mostly judged incorrect and unhelpful; the other agents have no planted change. The
score configs are declared first (`POST /api/score-configs`), so the pages know the types and labels.
A scored time is a little after its run (the judge minutes, the reviewer hours later, never in the
future). The kernel never imports ingest: this is a client of the HTTP API.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from kernel.examples.history import RELEASED_AGENT

JUDGE = "demo-judge"
REVIEWER = "reviewer@demo.example"
HUMAN_SAMPLE = 0.8
TONES = ("friendly", "neutral", "curt")
CONFIGS = (
    {"name": "helpfulness", "data_type": "numeric", "min": 1, "max": 5,
     "description": "How helpful the answer was, 1-5 (LLM judge)."},
    {"name": "correct", "data_type": "boolean", "description": "Whether the answer was right (a reviewer)."},
    {"name": "tone", "data_type": "categorical", "categories": list(TONES),
     "description": "The answer's tone (LLM judge)."},
)
BATCH = 1000


@dataclass(frozen=True)
class FinishedRun:
    """What the scores of one demo run depend on."""

    index: int
    agent: str
    version: str
    mode: str
    start: datetime | None  # aware UTC; None: the run happened now
    ok: bool
    trace_id: str


def _planted(run: FinishedRun) -> bool:
    return run.agent == RELEASED_AGENT and run.version == "v2"


def _at(run: FinishedRun, after: timedelta, now: datetime) -> str:
    start = run.start or now
    return min(start + after, now).isoformat()


def scores_of(run: FinishedRun, seed: int, now: datetime) -> list[dict[str, Any]]:
    """The judge's and (for a sample of live runs) the reviewer's scores of one run."""
    rng = random.Random(f"demo-scores:{seed}:{run.index}")
    worse = _planted(run)
    mean = (3.5 if worse else 4.3) if run.ok else 1.8
    helpful = int(min(5, max(1, round(rng.gauss(mean, 0.6)))))
    curt = 0.2 if worse else 0.05
    tone = rng.choices(TONES, weights=(0.6 - (curt - 0.05), 0.35, curt))[0]
    judged = _at(run, timedelta(minutes=rng.uniform(1, 5)), now)
    out = [
        {"trace_id": run.trace_id, "name": "helpfulness", "value": helpful, "source": "judge", "author": JUDGE,
         "created_at": judged, "comment": "judged from the task, the steps and the answer"},
        {"trace_id": run.trace_id, "name": "tone", "value": tone, "source": "judge", "author": JUDGE,
         "created_at": judged},
    ]
    if run.mode == "live" and rng.random() < HUMAN_SAMPLE:
        p_correct = (0.60 if worse else 0.92) if run.ok else 0.15
        correct = rng.random() < p_correct
        out.append({"trace_id": run.trace_id, "name": "correct", "value": correct, "source": "human",
                    "author": REVIEWER, "created_at": _at(run, timedelta(hours=rng.uniform(1, 30)), now),
                    **({} if correct else {"comment": "the answer does not resolve the request"})})
    return out


@dataclass
class PostedScores:
    accepted: int = 0
    error: str | None = None


def post_demo_scores(base_url: str, runs: list[FinishedRun], seed: int, headers: dict[str, str] | None = None,
                     now: datetime | None = None) -> PostedScores:
    """Declare the configs, then POST every run's scores; never raises (the error is returned)."""
    now = now or datetime.now(UTC)
    scores = [s for run in sorted(runs, key=lambda r: r.index) for s in scores_of(run, seed, now)]
    result = PostedScores()
    try:
        with httpx.Client(base_url=base_url.rstrip("/"), headers=headers or {}, timeout=60) as client:
            for config in CONFIGS:
                r = client.post("/api/score-configs", json=config)
                # 409: declared in steplens.toml, which wins; 401/403: a key without admin may still annotate
                if r.status_code not in (200, 401, 403, 409):
                    result.error = f"/api/score-configs answered {r.status_code}: {r.text[:300]}"
                    return result
            for i in range(0, len(scores), BATCH):
                r = client.post("/api/scores", json={"scores": scores[i:i + BATCH]})
                if r.status_code != 200:
                    result.error = f"/api/scores answered {r.status_code}: {r.text[:300]}"
                    return result
                result.accepted += int(r.json().get("accepted", 0))
    except httpx.HTTPError as exc:
        result.error = f"scores could not be posted ({type(exc).__name__}: {exc})"
    return result
