"""`steplens migrate` carries alerting over: a firing alert recorded on DuckDB is firing on ClickHouse
after the copy, with the same since, cooldown clock and history (event id, evidence, details), so the
first ClickHouse worker does not notify it again. Real DuckDB store in, embedded chDB out."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from ingest.alerts.state import Outcome
from ingest.config import Settings
from ingest.copy_store.cli import migrate_command
from ingest.queries import alerts as duck_alerts
from ingest.store.clickhouse.cursor import ClickHouseCursor
from ingest.store.clickhouse.queries import alerts as ch_alerts
from ingest.store.clickhouse.transport import open_transport
from ingest.store.store import SpanStore

T0 = datetime(2026, 3, 1, 8, 0)
HOUR = timedelta(hours=1)
HOT = [Outcome("agent_a", True, 9.5, "steps 9.5 > 2", {"n": 40}, ["t1", "t2"])]


def test_firing_alert_and_its_history_arrive_on_clickhouse(tmp_path: Path) -> None:
    store = SpanStore(Settings(db=tmp_path / "s.duckdb", grpc_port=0, normalize_processes=0))
    store.start()
    try:
        fired = duck_alerts.record(store, "steps high", "critical", ["log"], HOUR, HOT, T0)
        with store.read() as cur:
            states, events = duck_alerts.read_states(cur), duck_alerts.read_events(cur, 10)
    finally:
        store.stop()
    assert [e.event_id for e in events] == [e.event_id for e in fired]

    assert migrate_command(tmp_path / "s.duckdb", f"chdb://{tmp_path / 'ch'}") == 0
    transport = open_transport(f"chdb://{tmp_path / 'ch'}")
    try:
        cur = ClickHouseCursor(transport)
        assert ch_alerts.read_states(cur) == states
        assert ch_alerts.read_events(cur, 10) == events
        cur.close()
    finally:
        transport.close()
