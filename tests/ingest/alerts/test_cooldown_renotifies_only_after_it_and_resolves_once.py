"""Firing notifies once; while it keeps firing, a re-notification goes out only after the cooldown;
when the condition clears it resolves exactly once. Checked on the pure transition and end to end
(AlertService on a real store, DuckDB and ClickHouse, with a controllable clock, log channel captured)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from ingest.alerts.rules import AlertRule
from ingest.alerts.service import AlertService
from ingest.alerts.state import FIRING, OK, EventKind, Outcome, transition
from ingest.config import Settings
from ingest.store.backend import open_store, queries_of
from tests.ingest.analytics.synthetic import encode, now_utc, population, spread, store_overrides
from tests.ingest.api.harness import BACKENDS

T0 = datetime(2025, 6, 1, 12, 0)
HOUR = timedelta(hours=1)


def test_transition_table() -> None:
    hot = Outcome("a", True, 5.0, "hot")
    cold = Outcome("a", False, 1.0, "cold")
    s, kind = transition(None, cold, "r", HOUR, T0)
    assert (s.status, kind) == (OK, None)
    s, kind = transition(s, hot, "r", HOUR, T0)
    assert (s.status, kind, s.last_notified, s.since) == (FIRING, EventKind.FIRING, T0, T0)
    s, kind = transition(s, hot, "r", HOUR, T0 + 59 * timedelta(minutes=1))
    assert (s.status, kind, s.last_notified) == (FIRING, None, T0)  # inside the cooldown: silent
    s, kind = transition(s, hot, "r", HOUR, T0 + HOUR)
    assert (kind, s.last_notified, s.since) == (EventKind.RENOTIFY, T0 + HOUR, T0)  # since = first firing
    s, kind = transition(s, cold, "r", HOUR, T0 + 2 * HOUR)
    assert (s.status, kind, s.since) == (OK, EventKind.RESOLVED, T0 + 2 * HOUR)
    s, kind = transition(s, cold, "r", HOUR, T0 + 3 * HOUR)
    assert (s.status, kind) == (OK, None)  # resolved once, not on every evaluation


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    s = open_store(Settings(db=tmp_path / "steplens.duckdb", grpc_port=0, normalize_processes=0,
                            **store_overrides(request.param, tmp_path)))
    s.start()
    yield s
    s.stop()


def test_service_respects_cooldown_and_resolves_once(store, caplog) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    rng = np.random.default_rng(3)
    now = now_utc()
    runs = population(rng, 40, "agent_x", "1", spread(now - 3 * HOUR, now - HOUR, 40, rng))
    asyncio.run(store.submit("default", ExportTraceServiceRequest.FromString(encode(runs))))
    assert store.wait_loaded(10)

    rule = AlertRule(name="steps high", kind="threshold", metric="steps", threshold=2.0, min_samples=10,
                     window="24h", cooldown="1h")
    clock = [now.replace(tzinfo=None)]
    service = AlertService(store, [rule], [], clock=lambda: clock[0])
    service.start(background=False)
    caplog.set_level(logging.INFO, logger="ingest.alerts")
    try:
        kinds = []
        for minutes in (0, 30, 59, 61, 90, 125):
            clock[0] = now.replace(tzinfo=None) + timedelta(minutes=minutes)
            kinds.append([e.kind for e in service.check().events])
        assert kinds == [[EventKind.FIRING], [], [], [EventKind.RENOTIFY], [], [EventKind.RENOTIFY]]
        clock[0] = now.replace(tzinfo=None) + timedelta(days=2)  # the runs left the 24 h window
        assert [e.kind for e in service.check().events] == [EventKind.RESOLVED]
        clock[0] += HOUR
        assert service.check().events == []
        assert service.dispatcher.wait_idle(5)
    finally:
        service.stop()

    with store.read() as cur:
        history = queries_of(store).alerts.read_events(cur, 100)
    assert [e.kind for e in reversed(history)] == [
        EventKind.FIRING, EventKind.RENOTIFY, EventKind.RENOTIFY, EventKind.RESOLVED,
    ]
    assert all(e.subject == "agent_x" for e in history)
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("ALERT ")]
    assert [m.split()[1] for m in logged] == ["firing", "renotify", "renotify", "resolved"]
