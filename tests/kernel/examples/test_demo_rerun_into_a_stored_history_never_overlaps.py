"""`steplens demo` run twice into one store must not pile a second history on top of the first
(every day would count double and the planted events would blur): the second history is placed
before the earliest stored run; `--days 0` still sends its runs now."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import httpx
from rich.console import Console

from kernel.examples.cli import demo_command, place_history


def _starts(url: str) -> list[datetime]:
    runs, cursor = [], None
    while True:
        params = {"limit": 1000, "mode": "all", **({"cursor": cursor} if cursor else {})}
        page = httpx.get(f"{url}/api/runs", params=params, timeout=30).raise_for_status().json()
        runs += page["runs"]
        if not (cursor := page["next"]):
            return [datetime.fromisoformat(r["start_time"]).astimezone(UTC) for r in runs]


def test_a_second_history_goes_before_the_first_and_days_0_goes_now(ingest_server) -> None:
    url, quiet = ingest_server.http_url, Console(file=io.StringIO(), width=200)
    assert demo_command(url, runs=40, seed=1, concurrency=16, console=quiet, days=3) == 0
    assert ingest_server.store.wait_loaded(30)
    first = _starts(url)
    assert len(first) == 40 and max(first) - min(first) > timedelta(days=1)

    assert demo_command(url, runs=40, seed=2, concurrency=16, console=quiet, days=3) == 0
    assert ingest_server.store.wait_loaded(30)
    second = sorted(set(_starts(url)) - set(first))
    assert len(second) == 40
    assert max(second) < min(first), (max(second), min(first))
    assert "history: 3 days of runs" in quiet.file.getvalue()  # type: ignore[attr-defined]

    before = datetime.now(UTC)
    assert demo_command(url, runs=5, seed=3, concurrency=5, console=quiet, days=0) == 0
    assert ingest_server.store.wait_loaded(30)
    burst = sorted(set(_starts(url)) - set(first) - set(second))
    assert len(burst) == 5 and all(t >= before - timedelta(seconds=5) for t in burst)


def test_a_store_whose_runs_are_older_than_the_history_gets_it_ending_now() -> None:
    now = datetime(2026, 12, 1, 20, 30, 45, tzinfo=UTC)
    old = now - timedelta(days=30)
    assert place_history(14, None, None, now) == now.replace(second=0)
    assert place_history(14, old - timedelta(days=3), old, now) == now.replace(second=0)
    recent = now - timedelta(hours=2)
    assert place_history(14, recent - timedelta(days=14), recent, now) == (
        recent - timedelta(days=14) - timedelta(minutes=1)).replace(second=0, microsecond=0)


def test_an_ingest_only_key_still_sends_a_history_ending_now(start_ingest_server, monkeypatch) -> None:
    from ingest.config import ApiKey

    server = start_ingest_server(api_keys=[
        ApiKey(key="ingest-only-0123456789", project="p", scopes=["ingest"]),
        ApiKey(key="reader-0123456789", project="p", scopes=["read"])])
    monkeypatch.setenv("STEPLENS_API_KEY", "ingest-only-0123456789")
    quiet = Console(file=io.StringIO(), width=200)
    assert demo_command(server.http_url, runs=12, seed=4, concurrency=6, console=quiet, days=2) == 0
    assert "may not read the stored runs (403)" in quiet.file.getvalue()  # type: ignore[attr-defined]
    assert server.store.wait_loaded(30)
    page = httpx.get(f"{server.http_url}/api/runs", params={"mode": "all"}, headers={"x-api-key": "reader-0123456789"},
                     timeout=30).json()
    starts = [datetime.fromisoformat(r["start_time"]).astimezone(UTC) for r in page["runs"]]
    assert len(starts) == 12 and max(starts) - min(starts) > timedelta(hours=6)
