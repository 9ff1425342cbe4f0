"""The server's notion of now: naive UTC, the form every TIMESTAMP column of the store holds.

One function so the writer, the alert, queue and evaluator threads, the search indexer and the API
never disagree on the form (an aware datetime compared with a naive column fails or shifts)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Now in UTC without tzinfo, comparable with the store's TIMESTAMP values."""
    return datetime.now(UTC).replace(tzinfo=None)
