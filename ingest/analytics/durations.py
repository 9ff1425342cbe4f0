"""Durations as people write them in steplens.toml and query strings: `30s`, `15m`, `24h`, `7d`, `2w`."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated

from pydantic import BeforeValidator

_DURATION = re.compile(r"^\s*(\d{1,9})\s*(s|m|h|d|w)\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(value: object) -> timedelta:
    """`24h` -> timedelta(hours=24); a timedelta or a number of seconds passes through."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a duration like 30s, 15m, 24h, 7d or 2w")
    result = timedelta(**{_UNITS[match.group(2).lower()]: int(match.group(1))})
    if result <= timedelta(0):
        raise ValueError(f"duration {value!r} must be positive")
    return result


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
