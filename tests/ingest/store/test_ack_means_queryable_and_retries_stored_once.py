"""A submitted batch becomes queryable; the same batch sent again (also after a restart) is stored once."""

from __future__ import annotations

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


def _count(store, trace_id: str) -> tuple[int, int]:
    with store.read() as cur:
        total, distinct = cur.execute(
            "SELECT count(*), count(DISTINCT span_id) FROM spans WHERE trace_id = ?", [trace_id]
        ).fetchone()
    return total, distinct


async def test_submit_then_queryable(open_store) -> None:
    store = open_store()
    root, children = agent_run(steps=3)
    await store.submit("proj", request([root, *children]))
    assert store.wait_loaded(10)
    assert _count(store, root.trace_id) == (10, 10)
    with store.read() as cur:
        project, operation, agent = cur.execute(
            "SELECT project, operation, agent_name FROM spans WHERE span_id = ?", [root.span_id]
        ).fetchone()
    assert (project, operation, agent) == ("proj", "agent", "support_agent")
    assert store.stats().spans_stored == 10


async def test_retried_batch_and_duplicates_within_a_batch_stored_once(open_store) -> None:
    store = open_store()
    root, children = agent_run(steps=2)
    req = request([root, *children])
    await store.submit("proj", req)
    await store.submit("proj", req)  # a client retry after a lost response
    await store.submit("proj", request([children[0], children[0], root]))  # dup inside one batch
    assert store.wait_loaded(10)
    assert _count(store, root.trace_id) == (7, 7)
    stats = store.stats()
    assert stats.spans_stored == 7
    assert stats.spans_deduplicated == 7 + 3
    assert store.metrics.spans_deduplicated._value.get() == 10
    with store.read() as cur:
        runs = cur.execute("SELECT span_count, llm_calls FROM runs WHERE trace_id = ?", [root.trace_id]).fetchall()
    assert runs == [(7, 2)]  # duplicates never inflate the run's counts


async def test_same_ids_in_another_project_are_different_spans(open_store) -> None:
    store = open_store()
    root, children = agent_run(steps=1)
    req = request([root, *children])
    await store.submit("a", req)
    await store.submit("b", req)
    assert store.wait_loaded(10)
    assert _count(store, root.trace_id) == (8, 4)


async def test_retry_after_restart_is_still_deduplicated(open_store, make_settings) -> None:
    store = open_store()
    root, children = agent_run(steps=2)
    req = request([root, *children])
    await store.submit("proj", req)
    store.stop()
    store = open_store()
    await store.submit("proj", req)
    assert store.wait_loaded(10)
    assert _count(store, root.trace_id) == (7, 7)
    assert store.stats().spans_deduplicated == 7
