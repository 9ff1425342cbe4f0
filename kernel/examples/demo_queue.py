"""The demo history's annotation queue: failed live runs waiting for a reviewer, a few already
labelled by two of them so the Queues page has progress, results and agreement on `make run`.

What is written, through the HTTP API only (the kernel never imports ingest):

- the queue `failed-runs` (failed live runs, half of them sampled, the score configs `correct` and
  `tone` that kernel.examples.demo_scores declares, two people per run), created unless it exists;
- a backfill over the history, so its failed runs enter now (runs arriving later enter by themselves);
- two reviewers' `correct` labels on the first LABELLED runs of the queue (at most a third of it) (the second agrees with the
  first on about 80% of them), decided by (seed, position) alone; the rest stays pending for the visitor.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx

from kernel.examples.demo_scores import FinishedRun

QUEUE = "failed-runs"
REVIEWERS = ("reviewer-a@demo.example", "reviewer-b@demo.example")
LABELLED = 12
AGREEMENT = 0.8
SPEC = {
    "name": QUEUE,
    "description": "Failed live runs of the demo agents: was the outcome right, and how did the answer read?",
    "filter": {"ok": False},
    "sampling_rate": 0.5,
    "score_configs": ["correct", "tone"],
    "labels_per_item": 2,
}


@dataclass
class QueueResult:
    added: int = 0  # runs the backfill added to the queue
    labelled: int = 0  # labels the demo reviewers submitted
    error: str | None = None


def labelled_count(added: int) -> int:
    """How many runs the demo reviewers label: LABELLED, but never more than a third of the queue, so a
    small history still leaves runs for the visitor."""
    return min(LABELLED, added // 3)


def _label(rng: random.Random) -> dict[str, object]:
    """A reviewer's verdict on a failed run: mostly not correct (the tone is left to the visitor)."""
    return {"correct": rng.random() < 0.2}


def post_demo_queue(base_url: str, runs: list[FinishedRun], seed: int,
                    headers: dict[str, str] | None = None) -> QueueResult:
    """Create the demo queue (unless it exists), backfill it over `runs`' history, label a few runs."""
    result = QueueResult()
    starts = [r.start for r in runs if r.start is not None]
    since = (min(starts) if starts else datetime.now(UTC)) - timedelta(minutes=1)
    try:
        with httpx.Client(base_url=base_url, headers=headers or {}, timeout=60) as client:
            r = client.post("/api/queues", json=SPEC)
            if r.status_code not in (201, 409):  # 409: an earlier demo made it
                result.error = f"/api/queues answered {r.status_code}: {r.text[:300]}"
                return result
            r = client.post(f"/api/queues/{QUEUE}/backfill", json={"since": since.isoformat()})
            if r.status_code != 200:
                result.error = f"/api/queues/{QUEUE}/backfill answered {r.status_code}: {r.text[:300]}"
                return result
            result.added = r.json()["added"]
            for position in range(labelled_count(result.added)):
                rng = random.Random(f"demo-queue:{seed}:{position}")
                first = _label(rng)
                second = first if rng.random() < AGREEMENT else _label(rng)
                for reviewer, values in zip(REVIEWERS, (first, second), strict=True):
                    r = client.get(f"/api/queues/{QUEUE}/next", params={"user": reviewer})
                    item = r.json().get("item") if r.status_code == 200 else None
                    if r.status_code != 200:
                        result.error = f"/api/queues/{QUEUE}/next answered {r.status_code}: {r.text[:300]}"
                        return result
                    if item is None:
                        return result
                    r = client.post(f"/api/queues/{QUEUE}/items/{item['trace_id']}/submit",
                                    json={"user": reviewer, "scores": values})
                    if r.status_code != 200:
                        result.error = f"/api/queues/{QUEUE}/submit answered {r.status_code}: {r.text[:300]}"
                        return result
                    result.labelled += 1
    except httpx.HTTPError as exc:
        result.error = f"cannot reach {base_url}: {type(exc).__name__}"
    return result
