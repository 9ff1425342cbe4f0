"""The dedup key is (project, trace_id, span_id) whatever the timestamps: the same spans re-sent
with their start times moved by 10 s or an hour (a clock step, a re-export) are stored once, also
after a restart, and the run's tokens, LLM calls and cost are not doubled. Other traces loaded in
between (so the resend's batch window alone would not find the stored copies) change nothing."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from ingest.store.loading import MAX_PROBE_WINDOWS, merge_windows
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import T0, agent_run, request


def _shifted(spans, by: timedelta):
    return [dataclasses.replace(s, start=s.start + by) for s in spans]


def _facts(store, trace_id: str) -> tuple:
    with store.read() as cur:
        spans = cur.execute("SELECT count(*) FROM spans WHERE trace_id = ?", [trace_id]).fetchall()[0][0]
        run = cur.execute(
            "SELECT span_count, llm_calls, input_tokens, output_tokens, round(cost_usd, 9) FROM runs WHERE trace_id = ?",
            [trace_id],
        ).fetchall()
    return spans, run


@pytest.mark.parametrize("shift", [timedelta(seconds=10), timedelta(hours=1), timedelta(hours=-1)], ids=str)
@pytest.mark.parametrize("backend", BACKENDS)
async def test_resent_with_moved_start_stored_once(open_store, shift: timedelta) -> None:
    store = open_store()
    root, kids = agent_run(steps=3, start=T0)
    spans = [root, *kids]
    await store.submit("p", request(spans))
    # unrelated traces at other times, so the probe's windows are not trivially everything
    for k in range(3):
        other, other_kids = agent_run(steps=1, start=T0 + timedelta(hours=3 + k))
        await store.submit("p", request([other, *other_kids]))
    assert store.wait_loaded(20)
    before = _facts(store, root.trace_id)
    assert before[0] == 10 and before[1][0][:4] == (10, 3, 300, 60)

    await store.submit("p", request(_shifted(spans, shift)))  # every span again, moved
    await store.submit("p", request(_shifted(kids[:2], shift * 2)))  # some moved twice as far
    assert store.wait_loaded(20)
    assert _facts(store, root.trace_id) == before
    assert store.stats().spans_deduplicated == 12


@pytest.mark.parametrize("backend", BACKENDS)
async def test_resent_with_moved_start_after_restart_stored_once(open_store) -> None:
    store = open_store()
    root, kids = agent_run(steps=2, start=T0)
    await store.submit("p", request([root, *kids]))
    assert store.wait_loaded(20)
    before = _facts(store, root.trace_id)
    store.stop()

    store = open_store()
    await store.submit("p", request(_shifted([root, *kids], timedelta(hours=1))))
    assert store.wait_loaded(20)
    assert _facts(store, root.trace_id) == before
    assert store.stats().spans_deduplicated == 7


def test_probe_windows_merge_and_stay_bounded() -> None:
    hour = timedelta(hours=1)
    windows = [(T0 + k * hour, T0 + k * hour + timedelta(seconds=5)) for k in range(20)]
    merged = merge_windows(windows)
    assert len(merged) == MAX_PROBE_WINDOWS
    assert merged[0][0] == windows[0][0] and merged[-1][1] == windows[-1][1]
    for lo, hi in windows:  # every input window is still covered
        assert any(a <= lo and hi <= b for a, b in merged)
    assert merge_windows([(T0, T0 + hour), (T0 + timedelta(minutes=30), T0 + timedelta(minutes=40))]) == [(T0, T0 + hour)]
