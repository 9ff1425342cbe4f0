"""Example trace ids for a row: distinct, in the order the query ranked them, a few at most."""

from __future__ import annotations

from collections.abc import Iterable

EXAMPLES = 3


def pick_examples(candidates: Iterable[str | None] | None, n: int = EXAMPLES) -> list[str]:
    out: list[str] = []
    for trace_id in candidates or ():
        if trace_id and trace_id not in out:
            out.append(trace_id)
            if len(out) == n:
                break
    return out
