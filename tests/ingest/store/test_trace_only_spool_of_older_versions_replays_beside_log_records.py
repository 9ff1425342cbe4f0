"""Spool records carry a kind (traces or logs) since OTLP logs are stored; a spool written before
that (trace-only records, framed the original way) must still replay after an upgrade, and a spool
mixing both kinds must load each record as what it is: spans into `spans`, log records into
`log_records`, every one once."""

from __future__ import annotations

import struct
import zlib

import pytest

from ingest.store.spool import MAGIC, RecordKind, SpoolWriter, encode_record, read_segment, segment_name
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request
from tests.support.genai_logs import chat_with_events, encode_logs


def _original_record(project: str, payload: bytes) -> bytes:
    """A record exactly as the trace-only spool framed it: u32 length | u32 crc | u16 len | project | payload."""
    body = struct.pack("<H", len(project.encode())) + project.encode() + payload
    length = struct.pack("<I", len(body))
    return length + struct.pack("<I", zlib.crc32(body, zlib.crc32(length))) + body


def test_trace_records_are_still_framed_the_original_way() -> None:
    payload = request(list((lambda r: [r[0], *r[1]])(agent_run(steps=1)))).SerializeToString()
    assert encode_record("p", payload) == _original_record("p", payload)
    assert encode_record("p", payload, RecordKind.LOGS) != _original_record("p", payload)


@pytest.mark.parametrize("backend", BACKENDS)
def test_old_trace_only_spool_replays_then_mixed_kinds_load_as_what_they_are(make_settings, open_store) -> None:
    settings = make_settings()
    spool = settings.spool_path
    spool.mkdir(parents=True)
    old_runs = [agent_run(steps=1) for _ in range(3)]
    with open(spool / segment_name(1), "wb") as f:  # written by a version that knew only traces
        f.write(MAGIC)
        for root, kids in old_runs:
            f.write(_original_record("old", request([root, *kids]).SerializeToString()))

    chats = [chat_with_events() for _ in range(2)]
    new_root, new_kids = agent_run(steps=2)
    writer = SpoolWriter(spool, first_seq=2)
    writer.append(
        [
            encode_record("new", encode_logs(chats[0].logs).SerializeToString(), RecordKind.LOGS),
            encode_record("new", request([new_root, *new_kids]).SerializeToString()),
            encode_record("new", encode_logs(chats[1].logs).SerializeToString(), RecordKind.LOGS),
        ]
    )
    writer.close()
    assert [r.kind for r in read_segment(spool, 2)] == [RecordKind.LOGS, RecordKind.TRACES, RecordKind.LOGS]
    assert {r.kind for r in read_segment(spool, 1)} == {RecordKind.TRACES}

    store = open_store()
    assert store.stats().replayed_records == 6
    assert store.wait_loaded(10)
    with store.read() as cur:
        spans = dict(cur.execute("SELECT project, count(*) FROM spans GROUP BY project").fetchall())
        logs = cur.execute(
            "SELECT project, trace_id, count(*) FROM log_records GROUP BY ALL ORDER BY trace_id"
        ).fetchall()
        log_spans = {r[0] for r in cur.execute("SELECT DISTINCT span_id FROM log_records").fetchall()}
    assert spans == {"old": 3 * 4, "new": 7}
    assert logs == sorted([("new", c.trace_hex, 4) for c in chats], key=lambda r: r[1])
    assert log_spans == {c.chat_span_hex for c in chats}
    assert store.stats().logs_stored == 8
    store.stop()

    store = open_store()  # nothing replays twice
    assert store.stats().replayed_records == 0
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM log_records").fetchone()[0] == 8
        assert cur.execute("SELECT count(*) FROM spans").fetchone()[0] == 19


def test_a_single_record_decodes_with_its_kind_and_corruption_is_refused() -> None:
    from ingest.store.spool import decode_record

    logs = encode_logs(chat_with_events().logs).SerializeToString()
    assert decode_record(encode_record("p", logs, RecordKind.LOGS)) == (RecordKind.LOGS, "p", logs)
    assert decode_record(_original_record("old", b"spans")) == (RecordKind.TRACES, "old", b"spans")
    damaged = bytearray(encode_record("p", logs, RecordKind.LOGS))
    damaged[3] ^= 0x20  # a flipped kind bit fails the CRC like any other byte
    for bad in (bytes(damaged), encode_record("p", logs)[:-1], b"\x01"):
        with pytest.raises(ValueError):
            decode_record(bad)
