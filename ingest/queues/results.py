"""A queue's results: what each person labelled, per run and config, and the agreement figures.

Read from the queue's own decisions (`queue_labels`), which hold the values exactly as submitted
and the ids of the scores they became, so results are complete the moment a label is submitted.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import duckdb

from ingest.queues.agreement import ConfigAgreement, agreement
from ingest.queues.items import LABELLED
from ingest.queues.table import QueueRow


@dataclass(frozen=True)
class Results:
    labels: dict[str, dict[str, dict[str, Any]]]  # trace id -> person -> {config: value}
    per_person: dict[str, int]  # runs each person labelled
    skips: dict[str, int]  # runs each person skipped
    configs: list[ConfigAgreement]


def results(cur: duckdb.DuckDBPyConnection, queue: QueueRow) -> Results:
    rows = cur.execute(
        'SELECT trace_id, user_name, decision, "values" FROM queue_labels WHERE project = ? AND queue = ? '
        "ORDER BY trace_id, user_name", [queue.project, queue.name],
    ).fetchall()
    labels: dict[str, dict[str, dict[str, Any]]] = {}
    per_person: Counter[str] = Counter()
    skips: Counter[str] = Counter()
    for trace_id, user, decision, values in rows:
        if decision != LABELLED:
            skips[user] += 1
            continue
        per_person[user] += 1
        parsed = json.loads(values) if isinstance(values, str) else (values or {})
        labels.setdefault(trace_id, {})[user] = parsed
    configs = []
    for name in queue.spec.score_configs:
        by_run = {t: {u: v[name] for u, v in people.items() if v.get(name) is not None} for t, people in labels.items()}
        configs.append(agreement(name, by_run))
    return Results(labels, dict(per_person), dict(skips), configs)
