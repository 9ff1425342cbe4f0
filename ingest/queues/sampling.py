"""Which runs a queue samples: a pure function of (project, queue name, trace id) and the rate.

Why a hash and not a random draw: the live filler and a backfill over the same runs must pick the
same ones (a run seen by both enters once either way), a restart must not re-draw, and a test can
say exactly which runs belong in the queue. SHA-256 spreads trace ids uniformly whatever generated
them, so a rate of 0.25 takes a quarter of the runs within binomial noise.
"""

from __future__ import annotations

import hashlib

_SCALE = float(1 << 64)


def sample_point(project: str, queue: str, trace_id: str) -> float:
    """Where the run falls in [0, 1) for this queue: the first 8 bytes of a SHA-256, as a fraction."""
    digest = hashlib.sha256(f"{project}\x1f{queue}\x1f{trace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def sampled(project: str, queue: str, trace_id: str, rate: float) -> bool:
    """Whether the run is in the queue's sample: rate 1 takes every run, rate 0 none."""
    return rate >= 1.0 or sample_point(project, queue, trace_id) < rate
