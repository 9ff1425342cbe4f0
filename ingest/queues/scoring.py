"""The queue filter's score conditions (score missing, score below a value) as SQL over `scores`.

Kept apart from fill.py because it is the one place queues read the scores table's layout. A run's
scores are the rows naming its trace and no span (ingest/scores/model.py); "below" compares the
run's latest score of that name (by `created_at`, whoever gave it) as a number (booleans are 1/0),
so a person's corrected label, not their first one, decides whether the run needs another look.
"""

from __future__ import annotations

from ingest.queries.filters import Where
from ingest.queues.model import QueueFilter

_HAS_SCORE = """EXISTS (SELECT 1 FROM scores s WHERE s.project = runs.project AND s.trace_id = runs.trace_id
    AND s.span_id IS NULL AND s.name = ?)"""
_LATEST_BELOW = """(SELECT arg_max(s.value_numeric, s.created_at) FROM scores s WHERE s.project = runs.project
    AND s.trace_id = runs.trace_id AND s.span_id IS NULL AND s.name = ?) < ?"""


def score_clauses(where: Where, f: QueueFilter) -> None:
    """Add the filter's score conditions on the run (a query over `runs`) to `where`."""
    if f.score_missing is not None:
        where.add(f"NOT {_HAS_SCORE}", f.score_missing)
    if f.score_below is not None:
        where.add(_LATEST_BELOW, f.score_below.name, f.score_below.value)
