"""Which comparison the Regressions page opens on when the link names none.

Why: "last 24 h vs the 7 days before" is empty on a fresh install or a demo history whose release
finished days ago, and an empty first answer reads as "nothing to see". The page instead opens on
the first comparison that has runs on both sides: release vs release (two versions in range), then
the drift trend (one version, runs over time); the sidebar's range first, then the whole history
(drift: its default 28 days). The window comparison stays one click away.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dashboards.alerts_models import Regressions
from dashboards.client import Filters, QueryClient

WHOLE_RANGE = "all"


@dataclass(frozen=True)
class Opening:
    comparison: str
    since: str  # the sidebar's time range value to open on (may be wider than the link's)
    widened: bool  # the range was widened to find data


def has_data(comparison: str, data: Regressions) -> bool:
    """Runs on both sides of some finding (release), or a trend point of some agent (drift)."""
    if comparison == "release":
        return any(f.current.n > 0 and f.baseline.n > 0 for f in data.findings)
    return any(p.mean is not None for r in data.drift for p in r.points)


def choose_opening(api: QueryClient, filters: Filters, since: str) -> Opening:
    """The first of release and drift, over `since` then the whole range, with data; else window."""
    ranges = [since] if since == WHOLE_RANGE else [since, WHOLE_RANGE]
    # A version filter leaves one version: nothing to compare release against release.
    for comparison in ("release", "drift") if filters.version is None else ("drift",):
        for candidate in ranges:
            probe = replace(filters, since=None if candidate == WHOLE_RANGE else candidate)
            if has_data(comparison, api.regressions(probe, comparison)):
                return Opening(comparison, candidate, candidate != since)
    return Opening("window", since, False)
