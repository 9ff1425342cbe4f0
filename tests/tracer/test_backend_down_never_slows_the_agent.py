"""An unreachable or hung backend neither slows the agent's spans nor hangs shutdown; losses show.

The bounds below are correctness bounds, not speed claims: a blocking export would take at least
the export timeout (3 s) per batch, so finishing hundreds of spans or shutting down well under
that proves nothing waited on the network.
"""

from __future__ import annotations

import time

import tracer
from tests.tracer.otlp_sink import closed_port, silent_port
from tracer import spans

EXPORT_TIMEOUT_S = 3.0


def _emit(n: int) -> float:
    t0 = time.monotonic()
    for i in range(n):
        with spans.step_span(i) as step:
            step.record(kind="tool", action="x", observation="o" * 100)
    return time.monotonic() - t0


def _consistent(stats) -> bool:
    return stats.ended == stats.exported + stats.failed + stats.dropped + stats.pending


def test_hung_backend_spans_stay_prompt_and_shutdown_is_bounded():
    with silent_port() as port:
        handle = tracer.setup(service_name="hung", endpoint=f"http://127.0.0.1:{port}/v1/traces",
                              export_timeout_s=EXPORT_TIMEOUT_S, max_queue_size=16, schedule_delay_ms=20)
        elapsed = _emit(300)
        time.sleep(0.2)  # let the worker pick up a batch and block on the silent socket
        stats = handle.stats()
        assert elapsed < EXPORT_TIMEOUT_S / 2
        assert stats.ended == 300
        assert stats.exported == 0
        assert stats.dropped >= 300 - 2 * 16  # at most one queue plus one in-flight batch kept
        assert _consistent(stats)

        t0 = time.monotonic()
        clean = handle.shutdown(timeout_s=0.5)
        shutdown_s = time.monotonic() - t0
        assert shutdown_s < EXPORT_TIMEOUT_S - 1.0
        assert clean is False  # it had to abandon the in-flight export, and says so
        after = handle.stats()
        assert after.exported == 0 and after.dropped + after.failed + after.pending == 300
        assert _consistent(after)


def test_closed_port_failures_are_counted_and_spans_after_shutdown_are_dropped():
    handle = tracer.setup(service_name="down", endpoint=f"http://127.0.0.1:{closed_port()}/v1/traces",
                          export_timeout_s=0.5, max_queue_size=64, schedule_delay_ms=20)
    elapsed = _emit(40)
    assert elapsed < 1.0
    handle.force_flush(timeout_s=3)
    stats = handle.stats()
    assert stats.failed == 40 and stats.exported == 0 and stats.dropped == 0
    assert stats.last_error is not None
    t0 = time.monotonic()
    handle.shutdown(timeout_s=1.0)
    assert time.monotonic() - t0 < 2.0

    # The helpers now use the no-op tracer again; a span still held from the old provider is dropped.
    old_tracer = handle.tracer
    old_tracer.start_span("late").end()
    late = handle.stats()
    assert late.ended == 41 and late.dropped == 1 and _consistent(late)


def test_exporter_that_raises_is_counted_and_never_reaches_the_agent():
    class Exploding:
        def export(self, batch):
            raise RuntimeError("backend library bug")

        def shutdown(self):
            raise RuntimeError("and again")

        def force_flush(self, timeout_millis=30000):
            return True

    handle = tracer.setup(service_name="boom", exporter=Exploding(), schedule_delay_ms=20)
    _emit(5)
    handle.force_flush(timeout_s=3)
    stats = handle.stats()
    assert stats.failed == 5 and "RuntimeError: backend library bug" in stats.last_error
    assert handle.shutdown(timeout_s=2)
