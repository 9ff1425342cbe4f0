"""How much the people labelling the same runs agree, per score config.

Percent agreement: over every pair of people who labelled the same run, the share of pairs that gave
the same value. Cohen's kappa per pair of people: their agreement corrected for what their own label
frequencies would give by chance, kappa = (p_o - p_e) / (1 - p_e) over the runs both labelled
(Cohen 1960), None when chance agreement is already certain (both gave one same value throughout).
Values are compared exactly (a numeric score of 3 and 3.0 agree, 3 and 4 do not), so for numeric
configs this is agreement on the exact value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any


@dataclass(frozen=True)
class PairAgreement:
    raters: tuple[str, str]
    runs: int  # runs both labelled
    agreement: float  # share of those runs with the same value
    kappa: float | None


@dataclass(frozen=True)
class ConfigAgreement:
    name: str
    runs: int  # runs labelled by at least two people
    pairs: int  # pairs of labels compared (a run labelled by three people gives three)
    percent_agreement: float | None
    raters: list[PairAgreement]


def _key(value: Any) -> Any:
    """A value as compared: bools stay bools, numbers compare by value, anything else as text."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", float(value))
    return ("text", str(value))


def cohen_kappa(a: list[Any], b: list[Any]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items (same order); None when undefined."""
    if len(a) != len(b):
        raise ValueError("both raters must label the same items")
    n = len(a)
    if n == 0:
        return None
    ka, kb = [_key(x) for x in a], [_key(x) for x in b]
    observed = sum(x == y for x, y in zip(ka, kb, strict=True)) / n
    ca, cb = Counter(ka), Counter(kb)
    chance = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1.0 - chance)


def agreement(name: str, labels: Mapping[str, Mapping[str, Any]]) -> ConfigAgreement:
    """`labels`: trace id -> {person: value} for one config (only people who gave a value)."""
    runs = pairs = agree = 0
    by_pair: dict[tuple[str, str], tuple[list[Any], list[Any]]] = {}
    for per_user in labels.values():
        if len(per_user) < 2:
            continue
        runs += 1
        for u, v in combinations(sorted(per_user), 2):
            pairs += 1
            agree += _key(per_user[u]) == _key(per_user[v])
            left, right = by_pair.setdefault((u, v), ([], []))
            left.append(per_user[u])
            right.append(per_user[v])
    raters = [
        PairAgreement((u, v), len(a), sum(_key(x) == _key(y) for x, y in zip(a, b, strict=True)) / len(a),
                      cohen_kappa(a, b))
        for (u, v), (a, b) in sorted(by_pair.items())
    ]
    return ConfigAgreement(name, runs, pairs, agree / pairs if pairs else None, raters)
