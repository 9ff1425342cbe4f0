"""Planted secrets and personal data never reach an exported attribute, event or status.

The secrets go in through every content path the kernel has (task, messages, thought,
observation, tool arguments and result, answer) and through an exception message; the spans are
then exported over real OTLP/HTTP and the raw request bodies are searched byte for byte.
"""

from __future__ import annotations

import json

import pytest

import tracer
from tests.tracer.otlp_sink import otlp_sink
from tracer import conventions as c
from tracer import spans
from tracer.content import ContentPolicy, cap_utf8, fit_json
from tracer.redact import REDACTION_FAILED, build_redactor, default_redact, luhn_valid

API_KEY = "sk-proj-Abc123DEF456ghi789JKL012mno"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
EMAIL = "jane.doe@example.org"
CARD = "4111 1111 1111 1111"
SECRETS = (API_KEY, AWS_KEY, EMAIL, CARD, "hunter2", "Tk9TZWNyZXQ")


def _dirty(s: str) -> str:
    return f"{s} key={API_KEY} aws {AWS_KEY} mail {EMAIL} card {CARD} password=hunter2 Bearer Tk9TZWNyZXQx"


def test_planted_secrets_never_appear_in_exported_bytes():
    with otlp_sink() as sink:
        handle = tracer.setup(service_name="redact", endpoint=sink.url + "/v1/traces", schedule_delay_ms=50)
        try:
            with pytest.raises(ValueError), spans.run_span("agent", task=_dirty("task")) as run:
                with spans.step_span(1) as step:
                    with spans.chat_span(model="m", input_messages=[
                        {"role": "user", "content": _dirty("question")},
                        {"role": "assistant", "tool_calls": [
                            {"id": "c1", "name": "send", "arguments": {"to": EMAIL, "api_key": "plainvalue1"}}]},
                        {"role": "tool", "tool_call_id": "c1", "content": _dirty("tool said")},
                    ]) as chat:
                        chat.record_response(output_text=_dirty("answer"), output_tool_calls=[
                            {"id": "c2", "name": "pay", "arguments": {"card": CARD, "password": "hunter2"}}])
                    with spans.tool_span("send", arguments={"to": EMAIL, "token": "plainvalue2"}) as tool:
                        tool.finish(result=_dirty("result"), error_type="exception",
                                    error_message=_dirty("failed"))
                    step.record(kind="tool", thought=_dirty("thought"), observation=_dirty("obs"))
                run.finish(ok=True, stop_reason="finish", steps=1, answer=_dirty("final"))
                raise ValueError(_dirty("crash"))
            assert handle.force_flush(timeout_s=5)
        finally:
            handle.shutdown(timeout_s=5)
        body = b"".join(r.body for r in sink.requests)
        assert len(sink.spans()) == 4
        for secret in (*SECRETS, "plainvalue1", "plainvalue2"):
            assert secret.encode() not in body, secret
        assert b"[REDACTED:api_key]" in body and b"[REDACTED:email]" in body and b"[REDACTED:card]" in body
        assert b"question" in body and b"thought" in body  # the rest of the content is kept


def test_default_patterns():
    assert default_redact(f"use {API_KEY} now") == "use [REDACTED:api_key] now"
    assert default_redact(f"id {AWS_KEY}.") == "id [REDACTED:aws_key]."
    assert default_redact("Authorization: Bearer abcdefgh12345") == "Authorization: Bearer [REDACTED:token]"
    assert default_redact('api_key="xyz123"') == 'api_key="[REDACTED:secret]"'
    assert default_redact(f"<{EMAIL}>") == "<[REDACTED:email]>"
    assert default_redact("card 4111-1111-1111-1111 ok") == "card [REDACTED:card] ok"
    # Luhn-invalid digit runs (order numbers, timestamps) are kept
    assert default_redact("order 4111 1111 1111 1112") == "order 4111 1111 1111 1112"
    assert default_redact("ts 1700000000123") == "ts 1700000000123"
    assert luhn_valid("79927398713") and not luhn_valid("79927398710")


def test_user_hook_runs_after_defaults_and_fails_closed():
    redact = build_redactor(lambda s: s.replace("Project Falcon", "[codename]"))
    assert redact(f"Project Falcon by {EMAIL}") == "[codename] by [REDACTED:email]"

    def broken(s: str) -> str:
        raise RuntimeError("bug in hook")

    assert build_redactor(broken)(f"secret {EMAIL}") == REDACTION_FAILED
    assert build_redactor(lambda s: None)("x") == REDACTION_FAILED  # type: ignore[arg-type, return-value]
    assert build_redactor(lambda s: s, defaults=False)(EMAIL) == EMAIL


def test_broken_hook_in_setup_withholds_content(memory_handle_factory):
    handle = memory_handle_factory(redact=lambda s: 1 / 0)
    with spans.run_span("a", task=f"mail {EMAIL}"):
        pass
    (span,) = handle.memory_exporter.get_finished_spans()
    assert span.attributes[c.RUN_TASK] == REDACTION_FAILED


def test_cap_is_utf8_safe_and_marked():
    text = "é" * 10_000  # 2 bytes each
    capped = cap_utf8(text, 1001)
    assert len(capped.encode()) <= 1001
    assert capped.endswith("bytes]") and "truncated" in capped
    assert capped.startswith("éé") and "\ufffd" not in capped
    emoji = "😀" * 1000
    out = cap_utf8(emoji, 203)
    assert len(out.encode()) <= 203 and out.replace("😀", "").startswith("…[steplens: truncated")
    assert cap_utf8("short", 100) == "short"


def test_json_content_stays_valid_json_when_capped():
    messages = [{"role": "user", "parts": [{"type": "text", "content": "x" * 50_000}]},
                {"role": "assistant", "parts": [{"type": "text", "content": "short answer"}]}]
    out = fit_json(messages, 4096)
    assert len(out.encode()) <= 4096
    parsed = json.loads(out)
    assert parsed[1]["parts"][0]["content"] == "short answer"  # small leaves untouched
    assert "truncated" in parsed[0]["parts"][0]["content"]


def test_default_cap_applies_to_attributes(memory_handle_factory):
    handle = memory_handle_factory(content_max_bytes=1024)
    with spans.tool_span("t", arguments={"blob": "y" * 10_000}) as tool:
        tool.finish(result="z" * 10_000)
    (span,) = handle.memory_exporter.get_finished_spans()
    assert len(span.attributes[c.GEN_AI_TOOL_CALL_RESULT].encode()) <= 1024
    args = span.attributes[c.GEN_AI_TOOL_CALL_ARGUMENTS]
    assert len(args.encode()) <= 1024 and json.loads(args)["blob"].startswith("yyy")


def test_policy_env_default_is_16_kib(monkeypatch):
    from tracer.config import content_policy

    monkeypatch.delenv(c.ENV_CONTENT_MAX_BYTES, raising=False)
    assert content_policy().max_bytes == 16 * 1024
    monkeypatch.setenv(c.ENV_CONTENT_MAX_BYTES, "2048")
    assert content_policy().max_bytes == 2048
    monkeypatch.setenv(c.ENV_CONTENT_MAX_BYTES, "lots")
    assert content_policy().max_bytes == 16 * 1024
    assert ContentPolicy(max_bytes=1).max_bytes >= 64  # never smaller than the marker
