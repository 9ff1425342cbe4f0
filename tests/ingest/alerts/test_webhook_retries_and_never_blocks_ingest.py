"""Webhook delivery against a real HTTP receiver on 127.0.0.1: retried with backoff on 5xx until
delivered (Slack-compatible body with evidence), given up after max_attempts with an error log
that does not leak the URL, 4xx not retried, and a hanging webhook never delays ingest."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import httpx
import numpy as np
import pytest

from ingest.alerts.channels import Dispatcher
from ingest.alerts.rules import AlertChannelConfig
from ingest.alerts.state import AlertEvent, EventKind
from tests.ingest.alerts.receiver import receiver
from tests.ingest.analytics.synthetic import encode, now_utc, population, send, spread

RULE = {"name": "too many steps", "kind": "threshold", "metric": "steps", "threshold": 2.0, "min_samples": 10,
        "channels": ["log", "hook"], "severity": "critical"}


def _runs(n: int = 40):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    now = now_utc()
    return population(rng, n, "hooked_agent", "1", spread(now - timedelta(hours=2), now, n, rng))


def _channel(url: str, **kw: object) -> dict:  # type: ignore[type-arg]
    return {"name": "hook", "kind": "webhook", "url": url, "backoff_s": 0.05, **kw}


def test_webhook_retried_after_5xx_then_delivered_with_slack_body(server_on) -> None:  # type: ignore[no-untyped-def]
    with receiver([503, 502]) as hook:
        srv = server_on(alerts=[RULE], alert_channels=[_channel(hook.url, max_attempts=4)])
        send(srv.http_url, srv.store, _runs())
        r = httpx.post(srv.http_url + "/api/alerts/check", timeout=30)
        assert r.status_code == 200, r.text
        assert [e["kind"] for e in r.json()["events"]] == ["firing"]
        assert hook.wait_for(3), hook.answers
        time.sleep(0.3)
        assert hook.answers == [503, 502, 200]  # two failures retried, then delivered, nothing more
        body = hook.bodies[-1]
        assert "too many steps" in body["text"] and "hooked_agent" in body["text"]
        assert body["blocks"][0]["text"]["text"] == body["text"]
        event = body["steplens"]
        assert event["kind"] == "firing" and event["severity"] == "critical" and len(event["evidence"]) == 3
        assert all(t in body["text"] for t in event["evidence"])  # evidence is in the message itself


def test_webhook_given_up_after_max_attempts_is_logged_without_the_url(server_on, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.WARNING, logger="ingest.alerts")
    with receiver([500] * 10) as hook:
        srv = server_on(alerts=[RULE], alert_channels=[_channel(hook.url, max_attempts=3)])
        send(srv.http_url, srv.store, _runs())
        assert httpx.post(srv.http_url + "/api/alerts/check", timeout=30).status_code == 200
        assert hook.wait_for(3)
        deadline = time.monotonic() + 10
        while not any("failed after retries" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, "the given-up delivery was not logged"
            time.sleep(0.05)
        time.sleep(0.3)
        assert hook.answers == [500, 500, 500]
        assert not any("secret-token" in r.getMessage() for r in caplog.records)
        # the event is in the history even though the webhook never took it
        events = httpx.get(srv.http_url + "/api/alerts/events", timeout=10).json()["events"]
        assert [e["kind"] for e in events] == ["firing"] and events[0]["channels"] == ["log", "hook"]


def test_client_error_is_not_retried(server_on) -> None:  # type: ignore[no-untyped-def]
    with receiver([400]) as hook:
        srv = server_on(alerts=[RULE], alert_channels=[_channel(hook.url, max_attempts=5)])
        send(srv.http_url, srv.store, _runs())
        httpx.post(srv.http_url + "/api/alerts/check", timeout=30)
        assert hook.wait_for(1)
        time.sleep(0.5)
        assert hook.answers == [400]


def test_a_hanging_webhook_never_delays_ingest_or_the_check(server_on) -> None:  # type: ignore[no-untyped-def]
    with receiver(delay_s=3.0) as hook:
        srv = server_on(alerts=[RULE], alert_channels=[_channel(hook.url, max_attempts=3, timeout_s=2.0)])
        send(srv.http_url, srv.store, _runs())
        t0 = time.monotonic()
        assert httpx.post(srv.http_url + "/api/alerts/check", timeout=30).status_code == 200
        assert hook.wait_for(1)  # the dispatcher is now stuck on the slow webhook
        body = encode(_runs(5))
        for _ in range(5):
            r = httpx.post(srv.http_url + "/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"},
                           timeout=10)
            assert r.status_code == 200
        assert time.monotonic() - t0 < 2.0, "ingest waited for the webhook"


def test_full_notification_queue_drops_with_an_error_not_a_block(caplog) -> None:  # type: ignore[no-untyped-def]
    dispatcher = Dispatcher([AlertChannelConfig(name="hook", url="http://127.0.0.1:9/never")], queue_size=1)
    event = AlertEvent("e1", now_utc().replace(tzinfo=None), "r", "a", EventKind.FIRING, "warning", "s", 1.0, {}, [],
                       ["hook"])
    with caplog.at_level(logging.ERROR, logger="ingest.alerts"):
        t0 = time.monotonic()
        assert dispatcher.submit(event) is True
        assert dispatcher.submit(event) is False  # not started: the queue holds one
        assert time.monotonic() - t0 < 0.5
    assert dispatcher.stats.dropped == 1
    assert any("queue full" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("missing", ["STEPLENS_TEST_HOOK_UNSET"])
def test_webhook_url_from_an_unset_env_var_fails_loudly(missing: str, caplog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv(missing, raising=False)
    dispatcher = Dispatcher([AlertChannelConfig(name="hook", url_env=missing)])
    dispatcher.start()
    event = AlertEvent("e2", now_utc().replace(tzinfo=None), "r", "a", EventKind.FIRING, "warning", "s", 1.0, {}, [],
                       ["hook"])
    with caplog.at_level(logging.ERROR, logger="ingest.alerts"):
        dispatcher.submit(event)
        assert dispatcher.wait_idle(5)
    dispatcher.stop()
    assert dispatcher.stats.failed == 1
    assert any(missing in r.getMessage() for r in caplog.records)
