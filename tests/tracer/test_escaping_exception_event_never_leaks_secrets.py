"""An exception escaping a span becomes an `exception` event; its message and stack trace carry
whatever the failing code put in them, so they pass the redactor and the size cap like content
(even with content capture off: they are always recorded, so always cleaned)."""

from __future__ import annotations

import pytest
from opentelemetry.trace import StatusCode

from tracer import conventions as c
from tracer import spans

API_KEY = "sk-live-0123456789abcdefXYZ"
EMAIL = "bob.private@example.com"


def _fail_with_secrets() -> None:
    leaked = API_KEY  # a local in the frame: tracebacks show source lines, which may hold secrets
    raise PermissionError(f"token {leaked} of {EMAIL} rejected " + "x" * 5000)


@pytest.mark.parametrize("capture", [True, False])
def test_exception_event_is_redacted_and_capped(memory_handle_factory, capture: bool) -> None:
    handle = memory_handle_factory(capture_content=capture)
    with pytest.raises(PermissionError), spans.tool_span("leaky"):
        _fail_with_secrets()
    (span,) = handle.memory_exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR and span.attributes[c.ERROR_TYPE] == "PermissionError"
    (event,) = span.events
    assert event.name == c.EXCEPTION_EVENT and event.attributes[c.EXCEPTION_TYPE] == "PermissionError"
    message, stack = event.attributes[c.EXCEPTION_MESSAGE], event.attributes[c.EXCEPTION_STACKTRACE]
    everything = f"{span.status.description}\n{message}\n{stack}"
    assert API_KEY not in everything and EMAIL not in everything
    assert "[REDACTED:api_key]" in message and "[REDACTED:email]" in message
    assert "_fail_with_secrets" in stack  # the stack trace is still useful
    assert len(message.encode()) <= 1024 and "truncated" in message
    assert len(span.status.description.encode()) <= 256
