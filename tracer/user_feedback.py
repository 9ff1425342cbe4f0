"""`tracer.feedback(...)` (this module, exposed lazily by tracer/__init__.py; not named `feedback.py`
so that importing it never shadows the function on the package): an end user's judgment of a run (thumbs up, a rating, a label), sent from
the app as an OpenTelemetry `gen_ai.evaluation.result` event.

Why an OTel event, not a POST to the query API: the app already holds an OTLP endpoint and an
ingest key for its spans, the event is the GenAI conventions' own shape for an evaluation, and
ingest turns every such event into a score (source `client`, design.md §3 "scores"), whoever sent
it. The OTLP exporter (opentelemetry-exporter-otlp-proto-http) retries with backoff on the
retryable answers (429, 503, connection errors) within its timeout, honouring Retry-After.

Never raising into the app: bad arguments, no server, a refusal all come back as a
`FeedbackResult`; the export runs on one background thread, so `feedback` returns at once. Call
`result.wait(timeout_s)` to learn whether the server acknowledged (durably stored) it. At exit the
interpreter waits for a pending export at most its `timeout_s`.

The id: a digest of trace, span, name and user (`steplens.score.id`), so a user who changes their
feedback replaces it, and a repeated click stores one score.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource

from tracer import _state
from tracer import conventions as c

_log = logging.getLogger(__name__)
_HEX32 = re.compile(r"^[0-9a-fA-F]{32}$")
_HEX16 = re.compile(r"^[0-9a-fA-F]{16}$")
DEFAULT_LOGS_ENDPOINT = "http://127.0.0.1:4318/v1/logs"
DEFAULT_TIMEOUT_S = 10.0
MAX_NAME = 200
MAX_COMMENT = 10_000

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


@dataclass
class FeedbackResult:
    """What became of one `feedback` call. `error` is set when it was not sent (bad arguments) or
    once the export failed; `wait()` says whether the server acknowledged it."""

    score_id: str | None
    error: str | None = None
    _future: Future[bool] | None = field(default=None, repr=False)

    @property
    def sent(self) -> bool:
        """Handed to the exporter (False: refused before sending, see `error`)."""
        return self._future is not None

    def wait(self, timeout_s: float | None = None) -> bool:
        """True once the server acknowledged the feedback; False on failure or when `timeout_s` passes."""
        if self._future is None:
            return False
        try:
            return self._future.result(timeout_s)
        except Exception:  # noqa: BLE001 - a timeout or an exporter bug: not acknowledged
            return False


def feedback(
    trace_id: str,
    name: str,
    value: bool | int | float | str,
    *,
    comment: str | None = None,
    user: str | None = None,
    span_id: str | None = None,
    endpoint: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> FeedbackResult:
    """Send one score of the run `trace_id` (`RunResult.trace_id`) from the app; never raises.

    value: True/False (boolean), a number (numeric) or a label (categorical).
    endpoint: an OTLP/HTTP logs URL (or the server's base URL); default: next to the traces
    endpoint of `tracer.setup()`, else the `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` /
    `OTEL_EXPORTER_OTLP_ENDPOINT` rules, else http://127.0.0.1:4318/v1/logs.
    headers: e.g. the ingest key (`{"x-api-key": ...}`); default: those of `tracer.setup()`, else
    `OTEL_EXPORTER_OTLP_*HEADERS`.
    """
    try:
        problem = _problem(trace_id, name, value, span_id, comment)
        score_id = _score_id(trace_id, span_id, name, user) if problem is None else None
        if problem is not None:
            return FeedbackResult(None, problem)
        record = _record(trace_id, span_id, name, value, comment, user, score_id)
        result = FeedbackResult(score_id)
        target, sent_headers = _destination(endpoint, headers)
        result._future = _executor().submit(_export, record, target, sent_headers, timeout_s, result)
        return result
    except Exception as exc:  # noqa: BLE001 - feedback must never break the app
        _log.warning("steplens feedback not sent: %s: %s", type(exc).__name__, exc)
        return FeedbackResult(None, f"{type(exc).__name__}: {exc}")


def _problem(trace_id: object, name: object, value: object, span_id: object, comment: object) -> str | None:
    if not isinstance(trace_id, str) or not _HEX32.match(trace_id) or not any(ch != "0" for ch in trace_id):
        return "trace_id must be 32 hex characters (RunResult.trace_id)"
    if span_id is not None and (not isinstance(span_id, str) or not _HEX16.match(span_id)):
        return "span_id must be 16 hex characters"
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME:
        return f"name must be 1 to {MAX_NAME} characters"
    if comment is not None and not isinstance(comment, str):
        return "comment must be text"
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            finite = math.isfinite(float(value))
        except OverflowError:
            finite = False
        return None if finite else "a numeric value must be finite"
    if isinstance(value, str):
        return None if 1 <= len(value) <= MAX_NAME else f"a label must be 1 to {MAX_NAME} characters"
    return f"value must be true/false, a number or a label, not {type(value).__name__}"


def _score_id(trace_id: str, span_id: str | None, name: str, user: str | None) -> str:
    key = "\x1f".join(("feedback-v1", trace_id.lower(), (span_id or "").lower(), name, user or ""))
    return "fb-" + hashlib.sha256(key.encode()).hexdigest()[:32]


def _record(trace_id: str, span_id: str | None, name: str, value: bool | int | float | str,
            comment: str | None, user: str | None, score_id: str) -> LogRecord:
    attributes: dict[str, str | float] = {c.GEN_AI_EVALUATION_NAME: name, c.SCORE_ID: score_id}
    if isinstance(value, bool):
        attributes[c.GEN_AI_EVALUATION_SCORE_VALUE] = 1.0 if value else 0.0
        attributes[c.GEN_AI_EVALUATION_SCORE_LABEL] = "true" if value else "false"
        attributes[c.SCORE_DATA_TYPE] = "boolean"
    elif isinstance(value, int | float):
        attributes[c.GEN_AI_EVALUATION_SCORE_VALUE] = float(value)
        attributes[c.SCORE_DATA_TYPE] = "numeric"
    else:
        attributes[c.GEN_AI_EVALUATION_SCORE_LABEL] = value
        attributes[c.SCORE_DATA_TYPE] = "categorical"
    if comment:
        attributes[c.GEN_AI_EVALUATION_EXPLANATION] = comment[:MAX_COMMENT]
    if user:
        attributes[c.ENDUSER_ID] = user[:MAX_NAME]
    now = time.time_ns()
    return LogRecord(
        timestamp=now, observed_timestamp=now, trace_id=int(trace_id, 16),
        span_id=int(span_id, 16) if span_id else 0, event_name=c.GEN_AI_EVENT_EVALUATION_RESULT,
        attributes=attributes,
    )


def _destination(endpoint: str | None, headers: Mapping[str, str] | None) -> tuple[str | None, dict[str, str] | None]:
    """The logs URL and headers: explicit, else the active tracing setup's, else None (the OTLP
    exporter's environment rules, then the steplens default)."""
    from tracer.provider import active_handle

    handle = active_handle()
    config = handle.config if handle is not None else None
    if headers is None and config is not None and config.headers:
        headers = config.headers
    if endpoint is None and config is not None and config.endpoint and config.endpoint.startswith("http"):
        endpoint = config.endpoint
    if endpoint is not None:
        base = endpoint.rstrip("/")
        for suffix in ("/v1/traces", "/v1/logs"):
            if base.endswith(suffix):
                base = base[: -len(suffix)]
        endpoint = base + "/v1/logs"
    elif not (os.environ.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")):
        endpoint = DEFAULT_LOGS_ENDPOINT
    return endpoint, dict(headers) if headers else None


def _resource() -> Resource:
    from tracer.provider import active_handle

    handle = active_handle()
    return handle.provider.resource if handle is not None else Resource.create()


def _export(record: LogRecord, endpoint: str | None, headers: dict[str, str] | None, timeout_s: float,
            result: FeedbackResult) -> bool:
    """On the background thread: frame the record with the SDK, send it with the OTLP exporter."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=_resource())
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    provider.get_logger(_state.INSTRUMENTATION_NAME, _state.INSTRUMENTATION_VERSION).emit(record)
    provider.shutdown()
    exporter = OTLPLogExporter(endpoint=endpoint, headers=headers, timeout=timeout_s)
    try:
        outcome = exporter.export(memory.get_finished_logs())
    except Exception as exc:  # noqa: BLE001 - reported in the result, never raised
        outcome = LogRecordExportResult.FAILURE
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        exporter.shutdown()
    if outcome is not LogRecordExportResult.SUCCESS:
        result.error = result.error or f"the server at {endpoint or 'the OTLP endpoint'} did not acknowledge it"
        _log.warning("steplens feedback %s not acknowledged: %s", result.score_id, result.error)
        return False
    return True


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="steplens-feedback")
        return _pool
