"""A scores spool record that cannot be loaded (its payload is not a scores batch) is set aside in
the dead-letter directory as a SCORES record, listed by `steplens spool list` with its kind, never
blocks the score and span records around it nor replays after a restart."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ingest.scores.model import ScoreIn
from ingest.store import deadletter, scores_load
from ingest.store.spool import RecordKind, SpoolWriter, encode_record
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


def _scores(*names: str) -> bytes:
    now = datetime.now(UTC).replace(tzinfo=None)
    return scores_load.encode([ScoreIn(name=n, value=True, session_id="s").resolve("p", now) for n in names])


def test_unparsable_scores_record_dead_lettered_others_loaded(make_settings, open_store) -> None:
    settings = make_settings()
    spool = settings.spool_path
    root, kids = agent_run(steps=1)
    poison = encode_record("p", b'{"v": 1, "scores": [{"name": 5}]}', RecordKind.SCORES)
    writer = SpoolWriter(spool, first_seq=1)
    writer.append([
        encode_record("p", _scores("first"), RecordKind.SCORES),
        poison,
        encode_record("p", request([root, *kids]).SerializeToString()),
        encode_record("p", _scores("second", "third"), RecordKind.SCORES),
    ])
    writer.close()

    store = open_store()
    assert store.wait_loaded(10)
    with store.read() as cur:
        assert sorted(r[0] for r in cur.execute("SELECT name FROM scores").fetchall()) == ["first", "second", "third"]
        assert cur.execute("SELECT count(*) FROM spans WHERE trace_id = ?", [root.trace_id]).fetchone()[0] == 4
    assert store.stats().records_dead_lettered == 1
    dead = spool / "dead"
    assert [p.read_bytes() for p in dead.glob("*.rec")] == [poison]
    assert [d.kind for d in deadletter.list_dead(spool)] == ["scores"]
    store.stop()

    store = open_store()
    assert store.stats().replayed_records == 0
    assert store.stats().records_dead_lettered == 0


def test_spool_replay_loads_a_dead_scores_record_into_its_project(make_settings) -> None:
    """Once its cause is fixed, `steplens spool replay` loads a set-aside scores record, once."""
    from rich.console import Console

    from ingest.spool_cli import replay
    from ingest.store import SpanStore
    from ingest.store.spool import Position

    settings = make_settings()
    deadletter.write(settings.spool_path, Position(1, 100), "team-b", _scores("late"), 1, ValueError("was broken"),
                     RecordKind.SCORES)
    report = replay(settings, Console(quiet=True))
    assert (report.replayed, report.still_dead) == (1, 0)
    assert replay(settings, Console(quiet=True)).replayed == 0  # moved to dead/replayed: not twice
    store = SpanStore(settings)
    store.start()
    try:
        with store.read() as cur:
            assert cur.execute("SELECT project, name FROM scores").fetchall() == [("team-b", "late")]
    finally:
        store.stop()
