"""A split deployment on one ClickHouse: an ingest node takes the spans, the worker evaluates the
alert rule on its interval and notifies a real webhook receiver exactly once, and the api node lists
the worker's firing state and history; its `POST /api/alerts/check` evaluates without recording or
notifying (`recorded: false`, which `steplens alerts check` says), so the alert still fires once.

chDB (the ClickHouse engine in process) lets one process use its data directory, so the three nodes
run in this process on the same chDB directory (each with its own spool), wired as `steplens serve
--role ...` wires them (ingest.server.node_routers); the same nodes as separate processes on a
ClickHouse server are tests/ingest/roles/test_two_ingest_nodes_one_api_one_worker_share_a_clickhouse_server.py."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import httpx
import numpy as np

from tests.ingest.alerts.receiver import receiver
from tests.ingest.analytics.synthetic import now_utc, population, send, spread

RULE = {"name": "steps high", "kind": "threshold", "metric": "steps", "threshold": 2.0, "min_samples": 10,
        "interval": "1s", "cooldown": "1h", "channels": ["hook"]}


def _wait(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_worker_fires_once_and_the_api_node_shows_it_without_firing_again(start_ingest_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(9)
    now = now_utc()
    runs = population(rng, 40, "agent_split", "1", spread(now - timedelta(hours=3), now, 40, rng))
    shared = {"store": "clickhouse", "clickhouse_url": f"chdb://{tmp_path / 'shared-clickhouse'}", "grpc_port": 0}
    with receiver() as hook:
        channels = [{"name": "hook", "url": hook.url, "backoff_s": 0.05}]
        ingest = start_ingest_server(role="ingest", **shared)
        api = start_ingest_server(role="api", alerts=[RULE], alert_channels=channels, **shared)
        worker = start_ingest_server(role="worker", alerts=[RULE], alert_channels=channels, **shared)
        assert httpx.get(worker.http_url + "/readyz").json()["jobs"] == ["alerts", "queue_fill"]
        assert httpx.get(api.http_url + "/readyz").json()["jobs"] == []

        send(ingest.http_url, ingest.store, runs)
        assert hook.wait_for(1, timeout=30), "the worker did not notify the webhook"
        [body] = hook.bodies
        assert body["steplens"]["kind"] == "firing" and body["steplens"]["subject"] == "agent_split"

        # the api node reads the worker's state from ClickHouse
        def listed() -> dict:
            [rule] = httpx.get(api.http_url + "/api/alerts", timeout=10).json()["rules"]
            return rule

        assert _wait(lambda: listed()["firing"]), listed()
        rule = listed()
        [state] = rule["states"]
        assert state["subject"] == "agent_split" and state["status"] == "firing"
        assert rule["last_evaluated"] is not None  # when the worker last evaluated it

        check = httpx.post(api.http_url + "/api/alerts/check", timeout=30).json()
        assert check["recorded"] is False and check["events"] == [] and check["errors"] == {}
        assert [(f["rule"], f["subject"], f["since"]) for f in check["firing"]] == [
            ("steps high", "agent_split", state["since"])]

        # `steplens alerts check` (the real console script) against the api node: firing, exit 1, said unrecorded
        cli = subprocess.run([str(Path(sys.executable).with_name("steplens")), "alerts", "check", "--api", api.http_url],
                             capture_output=True, text=True, timeout=60)
        assert cli.returncode == 1, cli.stdout + cli.stderr
        assert "1 firing" in cli.stdout and "not recorded or notified by this node" in cli.stdout, cli.stdout

        time.sleep(3)  # three more of the worker's 1 s evaluations, and the api node's checks: still one
        assert len(hook.bodies) == 1, hook.bodies
        events = httpx.get(api.http_url + "/api/alerts/events", timeout=10).json()["events"]
        assert [(e["kind"], e["subject"]) for e in events] == [("firing", "agent_split")]
        assert events[0]["event_id"] == body["steplens"]["event_id"]
