"""The span helpers' clock, and a way to shift it for the runs started inside a block.

Why a shift exists: a demo history (and a backfill of recorded runs) needs runs that really
execute now but carry the timestamps of the day they stand for. Shifting the one clock every
span helper reads, per task (a ContextVar, so concurrent runs can each have their own), moves
every span, event and exception of a run by the same amount: durations, ordering and parent /
child nesting stay exactly as they were measured.

Without a shift the helpers pass no timestamps at all and the OpenTelemetry SDK stamps spans
itself, so the unshifted hot path costs one ContextVar read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_OFFSET_NS: ContextVar[int] = ContextVar("steplens_clock_offset_ns", default=0)


def offset_ns() -> int:
    """The current shift in nanoseconds (0: the real clock)."""
    return _OFFSET_NS.get()


def stamp_ns() -> int | None:
    """A timestamp for a span start, end or event: None (the SDK's own clock) when unshifted."""
    offset = _OFFSET_NS.get()
    return None if offset == 0 else time.time_ns() + offset


@contextmanager
def shifted(offset_s: float) -> Iterator[None]:
    """Spans started (and ended) inside are stamped `offset_s` seconds from the real time
    (negative: in the past). Nests by replacing, not adding, the outer shift."""
    token = _OFFSET_NS.set(round(offset_s * 1e9))
    try:
        yield
    finally:
        _OFFSET_NS.reset(token)
