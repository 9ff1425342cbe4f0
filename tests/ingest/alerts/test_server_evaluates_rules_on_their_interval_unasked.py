"""The server evaluates each rule on its own interval, with nobody calling `POST /api/alerts/check`:
a 1 s rule is re-evaluated about every second, fires by itself once runs that breach it arrive
(notification delivered to a real receiver), while a 1 h rule is evaluated only at startup; on each
store (DuckDB and ClickHouse)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import httpx
import numpy as np
import pytest

from tests.ingest.alerts.receiver import receiver
from tests.ingest.analytics.synthetic import now_utc, population, send, spread, store_overrides
from tests.ingest.api.harness import BACKENDS

FAST = {"name": "fast steps", "kind": "threshold", "metric": "steps", "threshold": 2.0, "min_samples": 10,
        "interval": "1s", "channels": ["hook"]}
SLOW = {**FAST, "name": "slow steps", "interval": "1h"}


def _rules(url: str) -> dict[str, dict]:  # type: ignore[type-arg]
    return {r["rule"]["name"]: r for r in httpx.get(url + "/api/alerts", timeout=10).json()["rules"]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_rules_run_on_their_interval_and_fire_without_a_check(server_on, tmp_path, backend: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(9)
    now = now_utc()
    runs = population(rng, 40, "agent_i", "1", spread(now - timedelta(hours=3), now, 40, rng))
    with receiver() as hook:
        srv = server_on(alerts=[FAST, SLOW], alert_channels=[{"name": "hook", "url": hook.url, "backoff_s": 0.05}], **store_overrides(backend, tmp_path))
        start = _rules(srv.http_url)
        send(srv.http_url, srv.store, runs)
        assert hook.wait_for(1), "the 1 s rule never fired by itself"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not _rules(srv.http_url)["fast steps"]["firing"]:
            time.sleep(0.1)
        later = _rules(srv.http_url)
    assert later["fast steps"]["firing"] and not later["slow steps"]["firing"]
    t0, t1 = (datetime.fromisoformat(r["fast steps"]["last_evaluated"]) for r in (start, later))
    assert t1 - t0 >= timedelta(seconds=1)
    assert later["slow steps"]["last_evaluated"] == start["slow steps"]["last_evaluated"]  # not due for an hour
    events = httpx.get(srv.http_url + "/api/alerts/events", timeout=10).json()["events"]
    assert [(e["rule"], e["kind"]) for e in events] == [("fast steps", "firing")]
