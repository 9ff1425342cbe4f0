"""On ClickHouse, alert state and events survive repeated writes without notifying twice: the rows of
one evaluation inserted a second time (a retried insert) leave one event and one state per subject,
the next evaluation reads the firing state and stays quiet, and a second store opened on the same
data (a restarted worker) reads the same state and history, and a worker clock stepping back never
hides a newer state. Real ClickHouseStore on embedded chDB."""

from __future__ import annotations

from datetime import datetime, timedelta

from ingest.alerts.state import FIRING, EventKind, Outcome, plan_outcomes
from ingest.store.clickhouse.queries import alerts

T0 = datetime(2026, 3, 1, 9, 0)
HOUR = timedelta(hours=1)


def _outcomes(firing: bool) -> list[Outcome]:
    return [Outcome("agent_a", firing, 7.5, "steps 7.5 > 2", {"n": 40}, ["t1", "t2"]),
            Outcome("agent_b", False, 1.0, "steps 1 <= 2")]


def test_same_evaluation_twice_is_one_event_and_the_next_stays_quiet(open_ch_store) -> None:  # type: ignore[no-untyped-def]
    store = open_ch_store()
    events = alerts.record(store, "steps high", "warning", ["log"], HOUR, _outcomes(True), T0)
    assert [(e.subject, e.kind) for e in events] == [("agent_a", EventKind.FIRING)]

    # the same evaluation's rows inserted again, as a retried write would (same digest event id)
    states, again = plan_outcomes({}, "steps high", "warning", ["log"], HOUR, _outcomes(True), T0)
    assert [e.event_id for e in again] == [e.event_id for e in events]
    with store.read() as cur:
        cur.insert("alert_state", alerts._state_rows(states, {}))  # the revision the first write had
        cur.insert("alert_events", alerts._event_rows(again))
        cur.insert("alert_events", alerts._event_rows(again))
        history = alerts.read_events(cur, 100)
        current = alerts.read_states(cur)
    assert [(e.event_id, e.kind, e.evidence, e.details) for e in history] == [
        (events[0].event_id, EventKind.FIRING, ["t1", "t2"], {"n": 40})]
    assert [(s.subject, s.status, s.since) for s in current] == [("agent_a", FIRING, T0), ("agent_b", "ok", T0)]

    # later evaluations read the firing state: inside the cooldown nothing, after it one renotify
    assert alerts.record(store, "steps high", "warning", ["log"], HOUR, _outcomes(True), T0 + HOUR / 2) == []
    later = alerts.record(store, "steps high", "warning", ["log"], HOUR, _outcomes(True), T0 + HOUR)
    assert [e.kind for e in later] == [EventKind.RENOTIFY]
    resolved = alerts.record(store, "steps high", "warning", ["log"], HOUR, _outcomes(False), T0 + 2 * HOUR)
    assert [e.kind for e in resolved] == [EventKind.RESOLVED]
    store.stop()

    reopened = open_ch_store()  # a restarted worker on the same ClickHouse data
    with reopened.read() as cur:
        kinds = [e.kind for e in alerts.read_events(cur, 100)]
        [state_a, _] = alerts.read_states(cur, "steps high")
    assert kinds == [EventKind.RESOLVED, EventKind.RENOTIFY, EventKind.FIRING]
    assert (state_a.status, state_a.since, state_a.last_notified) == ("ok", T0 + 2 * HOUR, T0 + HOUR)
    assert alerts.record(reopened, "steps high", "warning", ["log"], HOUR, _outcomes(False), T0 + 3 * HOUR) == []

    # the worker's clock steps back an hour: its newer writes still win (a revision, not a time)
    back = T0 + 2 * HOUR
    assert [e.kind for e in alerts.record(reopened, "steps high", "warning", ["log"], HOUR, _outcomes(True), back)] == [
        EventKind.FIRING]
    assert alerts.record(reopened, "steps high", "warning", ["log"], HOUR, _outcomes(True), back + HOUR / 6) == []
    with reopened.read() as cur:
        assert [s.status for s in alerts.read_states(cur, "steps high")] == [FIRING, "ok"]
