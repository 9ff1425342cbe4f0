"""With content capture off, no content attribute exists on any span or span event (a loop-guard
event's message, a memory operation's query and value and a replan's lessons included); switch
precedence holds."""

from __future__ import annotations

import pytest

from tracer import conventions as c
from tracer import spans
from tracer.config import resolve_capture


def _run_everything() -> None:
    with spans.run_span("a", task="the task") as run:
        with spans.memory_span(c.OP_SEARCH_MEMORY, store="s", scope="a/-", query="the task"):
            pass
        with spans.step_span(1) as step:
            with spans.chat_span(model="m", input_messages=[{"role": "user", "content": "hi"}]) as chat:
                chat.record_response(input_tokens=1, output_tokens=2, output_text="hello",
                                     output_tool_calls=[{"id": "1", "name": "t", "arguments": {}}])
            with spans.tool_span("t", call_id="1", arguments={"a": 1}) as tool:
                tool.finish(result="r")
                with spans.memory_span(c.OP_UPSERT_MEMORY, store="s", scope="a/-", key="k", content="a fact"):
                    pass
            spans.guard_event(rule="repeated_call", severity="soft", message="not again", tool_name="t")
            step.record(kind="tool", action="t", thought="thinking", observation="seen")
        with spans.replan_span("a", granularity="patch", from_version=1) as replan:
            replan.record_context(route_rule="patch", escalated=False, escalation_reset=False,
                                  lessons=["t failed: no such customer"], variables={"clean": 1}, tool_calls=1,
                                  budget_used_tokens=0)
        run.finish(ok=True, stop_reason="finish", steps=1, answer="done")


def _content_keys(handle) -> set[str]:
    finished = handle.memory_exporter.get_finished_spans()
    keys = {k for s in finished for k in s.attributes} | {k for s in finished for e in s.events for k in e.attributes}
    return keys & c.CONTENT_ATTRIBUTES


def test_capture_off_by_argument_leaves_no_content_attribute(memory_handle_factory):
    handle = memory_handle_factory(capture_content=False)
    _run_everything()
    finished = handle.memory_exporter.get_finished_spans()
    assert len(finished) == 7
    assert _content_keys(handle) == set()
    replan = next(s for s in finished if s.name == "replan a")
    assert replan.attributes[c.REPLAN_ROUTE_RULE] == "patch"  # the replan's non-content context stays
    chat = next(s for s in finished if s.name == "chat m")
    assert chat.attributes[c.GEN_AI_USAGE_OUTPUT_TOKENS] == 2  # non-content attributes still there


def test_capture_on_by_default_records_every_content_attribute(memory_handle_factory, monkeypatch):
    monkeypatch.delenv(c.ENV_CAPTURE_CONTENT, raising=False)
    monkeypatch.delenv(c.ENV_OTEL_CAPTURE_CONTENT, raising=False)
    handle = memory_handle_factory()
    _run_everything()
    assert _content_keys(handle) == c.CONTENT_ATTRIBUTES - {c.GEN_AI_SYSTEM_INSTRUCTIONS}


def test_steplens_env_switches_capture_off(memory_handle_factory, monkeypatch):
    monkeypatch.setenv(c.ENV_CAPTURE_CONTENT, "false")
    handle = memory_handle_factory()
    _run_everything()
    assert _content_keys(handle) == set()


@pytest.mark.parametrize(
    ("argument", "steplens", "otel", "expected"),
    [
        (None, None, None, True),  # default on
        (None, None, "false", False),
        (None, None, "span_only", True),
        (None, None, "NO_CONTENT", False),
        (None, None, "event_only", False),  # we only record on spans
        (None, "true", "false", True),  # ours beats the OTel variable
        (None, "0", "true", False),
        (True, "false", "false", True),  # the argument beats both
        (False, "true", "true", False),
        (None, "maybe", "false", False),  # unrecognised value is skipped, next one decides
    ],
)
def test_capture_precedence(argument, steplens, otel, expected):
    env = {}
    if steplens is not None:
        env[c.ENV_CAPTURE_CONTENT] = steplens
    if otel is not None:
        env[c.ENV_OTEL_CAPTURE_CONTENT] = otel
    assert resolve_capture(argument, env) is expected
