"""Reading the tracer's switches from arguments and environment variables.

Precedence for content capture (first that is set wins):
  1. the `capture_content` argument of `tracer.setup()`;
  2. `STEPLENS_CAPTURE_CONTENT` (true/false/1/0/yes/no/on/off) — ours, so it beats the generic one;
  3. `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` — the OTel GenAI variable: true,
     span_only, span_and_event mean on; false, no_content, event_only mean off (we record content
     only on spans);
  4. on (the kernel's default, design.md §2).
An unrecognised value is reported with a warning and skipped, never guessed.

`STEPLENS_CONTENT_MAX_BYTES` caps each content attribute (default 16 KiB) unless the argument
`content_max_bytes` is given.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from tracer.content import DEFAULT_MAX_BYTES, ContentPolicy
from tracer.conventions import ENV_CAPTURE_CONTENT, ENV_CONTENT_MAX_BYTES, ENV_OTEL_CAPTURE_CONTENT
from tracer.redact import Redactor, build_redactor

_log = logging.getLogger(__name__)

_TRUE = frozenset({"1", "true", "yes", "on", "span_only", "span_and_event"})
_FALSE = frozenset({"0", "false", "no", "off", "no_content", "event_only"})


def _parse_switch(name: str, env: Mapping[str, str]) -> bool | None:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    _log.warning("ignoring %s=%r: expected true/false", name, raw)
    return None


def resolve_capture(argument: bool | None, env: Mapping[str, str] | None = None) -> bool:
    """Whether content is captured; see the module docstring for the precedence."""
    if argument is not None:
        return argument
    env = os.environ if env is None else env
    for name in (ENV_CAPTURE_CONTENT, ENV_OTEL_CAPTURE_CONTENT):
        found = _parse_switch(name, env)
        if found is not None:
            return found
    return True


def resolve_max_bytes(argument: int | None, env: Mapping[str, str] | None = None) -> int:
    if argument is not None:
        return argument
    env = os.environ if env is None else env
    raw = env.get(ENV_CONTENT_MAX_BYTES)
    if raw:
        try:
            value = int(raw.strip())
            if value > 0:
                return value
        except ValueError:
            pass
        _log.warning("ignoring %s=%r: expected a positive integer", ENV_CONTENT_MAX_BYTES, raw)
    return DEFAULT_MAX_BYTES


def content_policy(
    capture_content: bool | None = None,
    redact: Redactor | None = None,
    content_max_bytes: int | None = None,
    *,
    default_redaction: bool = True,
    env: Mapping[str, str] | None = None,
) -> ContentPolicy:
    """Build the policy from arguments, falling back to the environment."""
    return ContentPolicy(
        capture=resolve_capture(capture_content, env),
        redact=build_redactor(redact, defaults=default_redaction),
        max_bytes=resolve_max_bytes(content_max_bytes, env),
    )


# The tracer's environment variables, documented once: the README's configuration table is
# generated from this list (steplens/config_doc.py), so the two cannot drift apart.
ENV_VARIABLES: tuple[tuple[str, str, str], ...] = (
    (ENV_CAPTURE_CONTENT, "on",
     "Record content (task, answer, thoughts, observations, messages, tool arguments/results) on spans: "
     "true/false, 1/0, yes/no, on/off. Beats the OTel variable below. Redaction always runs first."),
    (ENV_OTEL_CAPTURE_CONTENT, "unset (on)",
     "The standard GenAI switch, read when ours is unset: true/span_only/span_and_event = on; "
     "false/no_content/event_only = off."),
    (ENV_CONTENT_MAX_BYTES, str(DEFAULT_MAX_BYTES),
     "Cap per content attribute in UTF-8 bytes; longer text ends with an explicit truncation marker."),
    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "unset", "Full OTLP/HTTP traces URL, used as is."),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318", "Base URL; `/v1/traces` is appended."),
    ("OTEL_EXPORTER_OTLP_HEADERS", "unset", "`key=value,...` headers, e.g. `authorization=Bearer%20<key>`."),
    ("OTEL_EXPORTER_OTLP_TIMEOUT", "10 s", "Per export request, on a background thread (never delays the agent)."),
    ("OTEL_SERVICE_NAME", "steplens-agent", "`service.name` of the resource when `setup()` is not given one."),
)
