"""A logs spool record that cannot be loaded (its payload does not parse) is set aside in the
dead-letter directory as a LOGS record, counted as rejected log records, and never blocks the log
and span records around it nor replays after a restart."""

from __future__ import annotations

import pytest

from ingest.store.spool import RecordKind, SpoolWriter, encode_record
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request
from tests.support.genai_logs import chat_with_events, encode_logs

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


def test_unparsable_logs_record_dead_lettered_others_loaded(make_settings, open_store) -> None:
    settings = make_settings()
    spool = settings.spool_path
    chat = chat_with_events()
    root, kids = agent_run(steps=1)
    poison = encode_record("p", b"\xff\xff\xff\xff not a logs request", RecordKind.LOGS)
    writer = SpoolWriter(spool, first_seq=1)
    writer.append(
        [
            encode_record("p", encode_logs(chat.logs[:2]).SerializeToString(), RecordKind.LOGS),
            poison,
            encode_record("p", request([root, *kids]).SerializeToString()),
            encode_record("p", encode_logs(chat.logs[2:]).SerializeToString(), RecordKind.LOGS),
        ]
    )
    writer.close()

    store = open_store()
    assert store.wait_loaded(10)
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM log_records").fetchone()[0] == 4
        assert cur.execute("SELECT count(*) FROM spans WHERE trace_id = ?", [root.trace_id]).fetchone()[0] == 4
    assert store.stats().records_dead_lettered == 1
    assert store.metrics.logs_rejected.labels(reason="load_failed")._value.get() == 0  # no records counted in it
    dead = spool / "dead"
    assert [p.read_bytes() for p in dead.glob("*.rec")] == [poison]  # kept with its kind
    [reason] = [p.read_text() for p in dead.glob("*.txt")]
    assert "ExportLogsServiceRequest" in reason  # parsed as what its kind says
    store.stop()

    store = open_store()
    assert store.stats().replayed_records == 0
    assert store.stats().records_dead_lettered == 0
