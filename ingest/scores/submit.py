"""`submit_scores`: the ONE way scores get stored, whoever produced them.

The HTTP API (`POST /api/scores`), the CLI (through that API), annotation queues and online
evaluators (in the server process) all call `submit_scores` / `submit_scores_blocking`. Both
check every score against its config first (all or nothing: one violation refuses the batch with
every violation listed), then write the batch as ONE spool record of kind SCORES through the
store's group commit: when they return, the scores are fsynced and survive kill -9, exactly the
promise a 200 on /v1/traces makes. The writer thread loads them (ingest/store/scores_load.py),
replacing a stored score of the same id only with a newer one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from ingest.config import Settings
from ingest.errors import TooLarge
from ingest.scores.configs import ConfigSet, Violation, check, file_configs_for
from ingest.scores.model import Score, ScoreIn
from ingest.store import scores_load
from ingest.store.backend import queries_of

MAX_BATCH = 1000


class ScoresRejected(ValueError):
    """Scores that break their configs; nothing of the batch was stored."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        first = violations[0]
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        super().__init__(f"score {first.index}: {first.field}: {first.reason}{more}")


class ScoreStore(Protocol):
    """What submitting needs from the store (ingest.store.SpanStore is one)."""

    settings: Settings

    def read(self) -> AbstractContextManager[Any]: ...

    async def submit_score_payload(self, project: str, payload: bytes) -> None: ...

    def submit_score_payload_blocking(self, project: str, payload: bytes, timeout: float | None = None) -> None: ...


def configs_for(store: ScoreStore, project: str) -> ConfigSet:
    """The configs that apply to `project`: steplens.toml's, then those declared through the API."""
    with store.read() as cur:
        declared = queries_of(store).scores.api_configs(cur, project)  # the store's own SQL
    return ConfigSet(file_configs_for(store.settings.scores, project), declared)


def prepare(store: ScoreStore, project: str, scores: Sequence[ScoreIn], now: datetime | None = None) -> list[Score]:
    """The resolved scores of a batch, or TooLarge (over MAX_BATCH) / ScoresRejected (configs)."""
    if len(scores) > MAX_BATCH:
        _count_refused(store, "batch_too_large", len(scores))
        raise TooLarge(f"{len(scores)} scores in one batch; at most {MAX_BATCH}: split it")
    configs = configs_for(store, project)
    strict = store.settings.scores_strict
    violations = [v for i, s in enumerate(scores) if (v := check(s, configs.get(s.name), i, strict)) is not None]
    if violations:
        _count_refused(store, "config", len(scores))
        raise ScoresRejected(violations)
    moment = now or datetime.now(UTC).replace(tzinfo=None)
    return [s.resolve(project, moment, configs.type_of(s)) for s in scores]


def _count_refused(store: ScoreStore, reason: str, n: int) -> None:
    """`steplens_scores_rejected{reason}` (the store's metrics, when it has them): the whole batch."""
    metrics = getattr(store, "metrics", None)
    if metrics is not None:
        metrics.scores_rejected.labels(reason=reason).inc(n)


async def submit_scores(store: ScoreStore, project: str, scores: Sequence[ScoreIn]) -> list[Score]:
    """Check, then durably spool `scores` for `project`; returns the stored forms (their ids).

    Raises TooLarge, ScoresRejected, or the store's Overloaded/StorageUnavailable (retry later)."""
    resolved = await asyncio.to_thread(prepare, store, project, scores)
    if resolved:
        await store.submit_score_payload(project, scores_load.encode(resolved))
    return resolved


def submit_scores_blocking(
    store: ScoreStore, project: str, scores: Sequence[ScoreIn], timeout: float | None = 30.0
) -> list[Score]:
    """`submit_scores` for threads (the evaluator thread, queue workers): blocks until durable."""
    resolved = prepare(store, project, scores)
    if resolved:
        store.submit_score_payload_blocking(project, scores_load.encode(resolved), timeout)
    return resolved
