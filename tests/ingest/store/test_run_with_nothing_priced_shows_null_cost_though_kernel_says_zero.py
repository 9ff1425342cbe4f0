"""A steplens run whose LLM calls all failed (nothing priced) was stored with cost NULL while the
kernel said $0. A run span that declares `steplens.usage.cost_usd` now makes "nothing priced" 0,
in any arrival order; the declared total is never added on top of the children's costs; and a
foreign client's run with an unpriced model stays NULL (unknown is not free)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import T0, S, agent_run, new_trace_id, request
from tracer import conventions as c

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


def _cost(store, trace_id: str) -> float | None:
    with store.read() as cur:
        [(cost,)] = cur.execute("SELECT cost_usd FROM runs WHERE trace_id = ?", [trace_id]).fetchall()
    return cost


def _unpriced(root: S, children: list[S], declared: float | None) -> None:
    """Every chat failed (no tokens, no cost): what the kernel emits when the provider is down."""
    if declared is not None:
        root.attrs[c.USAGE_COST_USD] = declared
    for span in children:
        if span.name.startswith("chat"):
            for key in (c.COST_USD, c.GEN_AI_USAGE_INPUT_TOKENS, c.GEN_AI_USAGE_OUTPUT_TOKENS):
                span.attrs.pop(key)
            span.attrs[c.ERROR_TYPE] = "APIConnectionError"
            span.error = True


async def test_declared_run_with_nothing_priced_costs_zero_in_any_order(open_store) -> None:
    store = open_store()
    together, children_first, root_first = (agent_run() for _ in range(3))
    for root, children in (together, children_first, root_first):
        _unpriced(root, children, declared=0.0)
    await store.submit("p", request([*together[1], together[0]]))
    await store.submit("p", request(children_first[1]))
    await store.submit("p", request([root_first[0]]))
    assert store.wait_loaded(10)
    await store.submit("p", request([children_first[0]]))
    await store.submit("p", request(root_first[1]))
    assert store.wait_loaded(10)
    for root, _ in (together, children_first, root_first):
        assert _cost(store, root.trace_id) == 0.0


async def test_declared_total_is_not_added_to_the_childrens_costs(open_store) -> None:
    store = open_store()
    root, children = agent_run(steps=2)  # two chats of $0.001 each
    root.attrs[c.USAGE_COST_USD] = 0.002
    await store.submit("p", request([root]))  # the root alone first: nothing priced yet
    assert store.wait_loaded(10)
    assert _cost(store, root.trace_id) == 0.0
    await store.submit("p", request(children))
    assert store.wait_loaded(10)
    assert abs(_cost(store, root.trace_id) - 0.002) < 1e-12


async def test_foreign_run_with_unpriced_model_stays_unknown(open_store) -> None:
    store = open_store()
    tid = new_trace_id()
    root = S(tid, "handle_request", start=T0, duration=timedelta(seconds=2))
    chat = S(tid, "chat mystery-model-9", parent=root.span_id, start=T0 + timedelta(milliseconds=5), attrs={
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: "mystery-model-9",
        c.GEN_AI_USAGE_INPUT_TOKENS: 50, c.GEN_AI_USAGE_OUTPUT_TOKENS: 5,
    })
    undeclared, kids = agent_run()
    _unpriced(undeclared, kids, declared=None)
    await store.submit("p", request([chat, root, undeclared, *kids]))
    assert store.wait_loaded(10)
    assert _cost(store, tid) is None
    assert _cost(store, undeclared.trace_id) is None
