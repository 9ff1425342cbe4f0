"""What the Queues page shows, computed without Streamlit: widget choices as score values, the
results table (one row per run, one column per person and config) and the agreement rows.

Why apart from the page script: the conversions decide what value a label becomes (a boolean
radio's "true" must be the boolean true the config expects, not the text "true"), and that must be
testable on its own.
"""

from __future__ import annotations

from typing import Any

from dashboards.queues_models import Queue, Results, ScoreConfig

BOOLEAN_CHOICES = ("true", "false")


def score_value(config: ScoreConfig, raw: Any) -> bool | float | int | str | None:
    """The value a widget's choice stands for (None: left empty, nothing to submit)."""
    if raw is None or raw == "":
        return None
    if config.data_type == "boolean":
        return raw == "true" if isinstance(raw, str) else bool(raw)
    if config.data_type == "numeric":
        number = float(raw)
        return int(number) if number.is_integer() else number
    return str(raw)


def shown(value: Any) -> str:
    """A label's value as the tables show it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def result_rows(queue: Queue, results: Results) -> list[dict[str, str]]:
    """One row per labelled run: `run`, then `<person> · <config>` for each label given."""
    rows = []
    for trace_id, people in sorted(results.labels.items()):
        row = {"run": trace_id}
        for person in sorted(people):
            for name in queue.score_configs:
                if name in people[person]:
                    row[f"{person} · {name}"] = shown(people[person][name])
        rows.append(row)
    return rows


def agreement_rows(results: Results) -> list[dict[str, Any]]:
    """One row per (config, pair of people) who labelled the same runs."""
    rows: list[dict[str, Any]] = []
    for config in results.agreement:
        for pair in config.raters:
            rows.append({"score": config.name, "people": " & ".join(pair.raters), "runs": pair.runs,
                         "agreement": round(pair.agreement, 4),
                         "kappa": None if pair.kappa is None else round(pair.kappa, 4)})
    return rows
