"""A backend that refuses connections or never answers neither slows a traced kernel run nor
hides the loss: the run finishes normally and promptly, and the handle counts what was lost.

Promptness is proved where it can be: against a backend that never answers, an export that
blocked the run would cost the whole export timeout (10 s), so a 10-step run finishing in under half
of it proves nothing waited (a correctness bound with a wide margin for a loaded machine, not a
speed claim). A refused connection fails an export in milliseconds, so no time bound could tell a
blocking export from a queued one there: that test asserts the outcome and the visible loss."""

from __future__ import annotations

import time

import tracer
from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from tests.tracer.kernel.kernel_runs import act, agent, final
from tests.tracer.otlp_sink import closed_port, silent_port

EXPORT_TIMEOUT_S = 10.0
STEPS = 10


def _llm() -> ScriptedLLM:
    return ScriptedLLM([act("add", a=i, b=1) for i in range(STEPS - 1)] + [final("done")])


async def _timed_run() -> tuple[float, object]:
    t0 = time.monotonic()
    result = await agent(_llm(), budget=Budget(max_steps=STEPS)).run("count")
    return time.monotonic() - t0, result


async def test_refused_connections() -> None:
    handle = tracer.setup(service_name="down", endpoint=f"http://127.0.0.1:{closed_port()}/v1/traces",
                          export_timeout_s=1.0, schedule_delay_ms=100)
    try:
        _, result = await _timed_run()
        assert result.ok and len(result.steps) == STEPS and result.trace_id is not None
        handle.force_flush(timeout_s=5)
        stats = handle.stats()
        assert stats.ended == 1 + STEPS * 3 + (STEPS - 1) * 2  # run + (step, check, chat) + (tool, truncate)
        assert stats.exported == 0 and stats.failed > 0 and stats.last_error is not None  # loss is visible
        assert stats.ended == stats.exported + stats.failed + stats.dropped + stats.pending
    finally:
        t0 = time.monotonic()
        handle.shutdown(timeout_s=1.0)
        assert time.monotonic() - t0 < 2.0


async def test_backend_that_never_answers() -> None:
    with silent_port() as port:
        handle = tracer.setup(service_name="hung", endpoint=f"http://127.0.0.1:{port}/v1/traces",
                              export_timeout_s=EXPORT_TIMEOUT_S, max_queue_size=8, schedule_delay_ms=10)
        try:
            elapsed, result = await _timed_run()
            assert result.ok and len(result.steps) == STEPS
            assert elapsed < EXPORT_TIMEOUT_S / 2
            stats = handle.stats()
            assert stats.exported == 0 and stats.dropped > 0  # the small queue overflowed: counted
        finally:
            t0 = time.monotonic()
            clean = handle.shutdown(timeout_s=0.5)
            assert time.monotonic() - t0 < EXPORT_TIMEOUT_S - 1.0
            assert clean is False  # it abandoned the in-flight export and says so
