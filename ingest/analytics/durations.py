"""Durations as people write them in steplens.toml and query strings: `30s`, `15m`, `24h`, `7d`, `2w`."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated

from pydantic import BeforeValidator

_DURATION = re.compile(r"^\s*(\d{1,9})\s*(s|m|h|d|w)\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
# Longest duration accepted (100 years): longer ones only overflow date arithmetic.
MAX_DURATION = timedelta(days=36_500)


def parse_duration(value: object) -> timedelta:
    """`24h` -> timedelta(hours=24); a timedelta or a number of seconds passes through."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return timedelta(seconds=value)
        except (OverflowError, ValueError) as exc:  # 1e30 seconds, nan
            raise ValueError(f"duration {value!r} is out of range") from exc
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a duration like 30s, 15m, 24h, 7d or 2w")
    try:
        result = timedelta(**{_UNITS[match.group(2).lower()]: int(match.group(1))})
    except OverflowError:  # 999999999w: not a ValueError, so it used to escape validation as a 500
        result = MAX_DURATION + timedelta(1)
    if result <= timedelta(0):
        raise ValueError(f"duration {value!r} must be positive")
    if result > MAX_DURATION:
        raise ValueError(f"duration {value!r} is longer than {MAX_DURATION.days} days")
    return result


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
