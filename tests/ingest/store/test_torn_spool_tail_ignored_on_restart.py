"""A crash mid-append leaves a torn record at a segment's tail: replay loads what precedes it and
ignores the rest, the store keeps working, and nothing is loaded twice."""

from __future__ import annotations

import pytest

from ingest.store.spool import SpoolWriter, encode_record, list_segments, segment_name
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request


def _tear(kind: str, record: bytes) -> bytes:
    if kind == "truncated":
        return record[: len(record) // 2]
    if kind == "bad_crc":
        return record[:-1] + bytes([record[-1] ^ 0xFF])
    if kind == "zero_filled":
        return b"\x00" * 64
    return record[:5]  # torn header


def _count(store, trace_ids: list[str]) -> int:
    with store.read() as cur:
        marks = ", ".join("?" for _ in trace_ids)
        return cur.execute(f"SELECT count(*) FROM spans WHERE trace_id IN ({marks})", trace_ids).fetchone()[0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["truncated", "bad_crc", "zero_filled", "torn_header"])
async def test_torn_tail_ignored(make_settings, open_store, kind: str) -> None:
    settings = make_settings()
    spool = settings.spool_path
    good = [agent_run(steps=1) for _ in range(3)]
    writer = SpoolWriter(spool, first_seq=1)
    writer.append([encode_record("p", request([r, *k]).SerializeToString()) for r, k in good])
    writer.close()
    lost_root, lost_kids = agent_run(steps=1)
    with open(spool / segment_name(1), "ab") as f:  # the crash: a record whose fsync never finished
        f.write(_tear(kind, encode_record("p", request([lost_root, *lost_kids]).SerializeToString())))

    store = open_store()
    assert store.stats().replayed_records == 3
    good_ids = [r.trace_id for r, _ in good]
    assert _count(store, good_ids) == 12
    assert _count(store, [lost_root.trace_id]) == 0

    later_root, later_kids = agent_run(steps=1)
    await store.submit("p", request([later_root, *later_kids]))  # appended to a NEW segment
    assert store.wait_loaded(10)
    assert list_segments(spool)[0] >= 2  # the torn segment was fully consumed and deleted
    store.stop()

    store = open_store()
    assert _count(store, good_ids) == 12
    assert _count(store, [later_root.trace_id]) == 4
    assert store.stats().spans_deduplicated == 0  # nothing replayed twice
