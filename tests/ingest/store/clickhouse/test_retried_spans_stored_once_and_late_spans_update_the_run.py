"""On the ClickHouse store: an acked batch is queryable, a retried batch (also after a restart) is
stored once, and spans arriving after their run was derived update the run."""

from __future__ import annotations

from tests.ingest.store.otlp_build import agent_run, request


def _spans(store, trace_id: str) -> tuple[int, int]:
    with store.read() as cur:
        return cur.execute(
            "SELECT count(), uniqExact(span_id) FROM spans WHERE trace_id = ?", [trace_id]
        ).fetchone()


def _run(store, trace_id: str) -> list[tuple]:
    with store.read() as cur:
        return cur.execute(
            "SELECT span_count, llm_calls, agent, ok, steps, stop_reason FROM runs FINAL WHERE trace_id = ?", [trace_id]
        ).fetchall()


async def test_retried_batch_and_duplicates_within_a_batch_stored_once(open_ch_store) -> None:
    store = open_ch_store()
    root, children = agent_run(steps=2)
    req = request([root, *children])
    await store.submit("proj", req)
    await store.submit("proj", req)  # a client retry after a lost response
    await store.submit("proj", request([children[0], children[0], root]))  # dup inside one batch
    assert store.wait_loaded(20)
    assert _spans(store, root.trace_id) == (7, 7)
    assert store.stats().spans_stored == 7
    assert store.stats().spans_deduplicated == 7 + 3
    assert _run(store, root.trace_id) == [(7, 2, "support_agent", True, 2, "finish")]


async def test_late_root_span_updates_the_run(open_ch_store) -> None:
    store = open_ch_store()
    root, children = agent_run(steps=2, ok=False)
    await store.submit("proj", request(children))
    assert store.wait_loaded(20)
    before = _run(store, root.trace_id)
    assert len(before) == 1 and before[0][0] == 6 and before[0][2] is None  # no root yet: no agent
    await store.submit("proj", request([root]))
    assert store.wait_loaded(20)
    assert _run(store, root.trace_id) == [(7, 2, "support_agent", False, 2, "max_steps")]


async def test_retry_after_restart_is_still_stored_once(open_ch_store) -> None:
    store = open_ch_store()
    root, children = agent_run(steps=2)
    await store.submit("proj", request([root, *children]))
    assert store.wait_loaded(20)
    store.stop()
    again = open_ch_store()
    await again.submit("proj", request([root, *children]))
    assert again.wait_loaded(20)
    assert _spans(again, root.trace_id) == (7, 7)
    assert _run(again, root.trace_id)[0][0] == 7
