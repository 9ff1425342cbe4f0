"""Alert state and history live in the store (DuckDB, or ClickHouse tables): after a server restart a
firing alert is still firing, keeps its cooldown clock (no duplicate notification to the webhook),
and its history is still listed."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.ingest.alerts.receiver import receiver
from tests.ingest.analytics.synthetic import now_utc, population, send, spread, store_overrides
from tests.ingest.api.harness import BACKENDS

RULE = {"name": "steps high", "kind": "threshold", "metric": "steps", "threshold": 2.0, "min_samples": 10,
        "cooldown": "1h", "channels": ["hook"]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_firing_state_cooldown_and_history_survive_a_restart(server_on, tmp_path: Path, backend: str) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "restart" / "steplens.duckdb"
    store = store_overrides(backend, db.parent)  # the same ClickHouse data directory after the restart
    rng = np.random.default_rng(5)
    now = now_utc()
    runs = population(rng, 40, "agent_r", "1", spread(now - timedelta(hours=3), now, 40, rng))
    with receiver() as hook:
        channels = [{"name": "hook", "url": hook.url, "backoff_s": 0.05}]
        srv = server_on(db, alerts=[RULE], alert_channels=channels, **store)
        send(srv.http_url, srv.store, runs)
        first = httpx.post(srv.http_url + "/api/alerts/check", timeout=30).json()
        assert [e["kind"] for e in first["events"]] == ["firing"]
        assert hook.wait_for(1)
        before = httpx.get(srv.http_url + "/api/alerts", timeout=10).json()
        srv.stop()

        srv = server_on(db, alerts=[RULE], alert_channels=channels, **store)
        after = httpx.get(srv.http_url + "/api/alerts", timeout=10).json()
        [rule] = after["rules"]
        assert rule["firing"] is True
        [state] = rule["states"]
        [old] = before["rules"][0]["states"]
        assert state["subject"] == "agent_r" and state["status"] == "firing"
        assert state["since"] == old["since"] and state["last_notified"] == old["last_notified"]

        again = httpx.post(srv.http_url + "/api/alerts/check", timeout=30).json()
        assert again["events"] == []  # still within the cooldown: not notified twice
        assert [(f["rule"], f["subject"]) for f in again["firing"]] == [("steps high", "agent_r")]
        time.sleep(0.5)
        assert len(hook.bodies) == 1

        events = httpx.get(srv.http_url + "/api/alerts/events", timeout=10).json()["events"]
        assert [(e["kind"], e["subject"]) for e in events] == [("firing", "agent_r")]
        assert events[0]["event_id"] == first["events"][0]["event_id"]
        assert len(events[0]["evidence"]) == 3
