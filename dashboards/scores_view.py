"""The Overview page's Scores table: the API's per-day score aggregates summed over the range.

Why here and not in SQL: the dashboards write no SQL (design.md §1); the API answers per name,
agent, version and day, and a range's figure is those days weighted by their counts.
"""

from __future__ import annotations

from typing import Any

from dashboards.models import ScoreAggregate


def overview_rows(aggregates: list[ScoreAggregate]) -> list[dict[str, Any]]:
    """One row per (name, agent, version): scores counted, mean (numeric), share true (boolean), the
    label counts (categorical, most frequent first), ordered by name, agent, version."""
    groups: dict[tuple[str, str, str | None, str | None], dict[str, Any]] = {}
    for a in aggregates:
        key = (a.name, a.data_type or "", a.agent, a.version)
        g = groups.setdefault(key, {"n": 0, "sum": 0.0, "labels": {}})
        g["n"] += a.n
        value = a.mean if a.data_type == "numeric" else a.share_true if a.data_type == "boolean" else None
        if value is not None:
            g["sum"] += value * a.n
        for label, count in (a.labels or {}).items():
            g["labels"][label] = g["labels"].get(label, 0) + count
    rows = []
    for (name, data_type, agent, version), g in sorted(groups.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        average = g["sum"] / g["n"] if g["n"] and data_type in ("numeric", "boolean") else None
        labels = sorted(g["labels"].items(), key=lambda kv: (-kv[1], kv[0]))
        rows.append({
            "score": name, "agent": agent, "version": version, "scores": g["n"],
            "mean": average if data_type == "numeric" else None,
            "share true": average if data_type == "boolean" else None,
            "labels": " · ".join(f"{label} {count}" for label, count in labels) or None,
        })  # fmt: skip
    return rows
