"""Sending requests to the server's OTLP/HTTP endpoint: protobuf, gzip, retries honouring Retry-After.

Why these retry rules: OTLP/HTTP calls only 429/502/503/504 (and lost connections) retryable; the
steplens server answers overload with 503 + Retry-After (<= 5 s), so waiting what it asks (and
backing off with jitter when it does not say) is what lets a large import ride out a busy server.
"""

from __future__ import annotations

import email.utils
import gzip
import time
from collections.abc import Callable
from datetime import UTC

import httpx
from google.protobuf.message import DecodeError
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
    wait_random,
)

from ingest.importer.models import ImportOptions

_RETRY_STATUS = frozenset({429, 502, 503, 504})


class RetryableAnswer(Exception):
    """A 429/502/503/504 answer: retried after its Retry-After (or with backoff)."""

    def __init__(self, status: int, message: str, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.retry_after = retry_after


class Fatal(Exception):
    """The import cannot go on (server unreachable, key refused): the message says what to do."""


_RETRY_ERRORS = (RetryableAnswer, httpx.NetworkError, httpx.TimeoutException, httpx.RemoteProtocolError)


def traces_url(api: str) -> str:
    """The OTLP traces URL from the base URL (a URL already ending in /v1/traces is kept)."""
    base = api.strip().rstrip("/")
    return base if base.endswith("/v1/traces") else base + "/v1/traces"


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a Retry-After header: delta-seconds or an HTTP date; None when absent/unusable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def answer_message(response: httpx.Response) -> str:
    """The server's reason: a google.rpc.Status (OTLP error body) or else the text."""
    content = response.content
    if "protobuf" in response.headers.get("content-type", ""):
        try:
            status = Status.FromString(content)
            if status.message:
                return status.message
        except (DecodeError, ValueError):
            pass
    text = content.decode("utf-8", "replace").strip()
    return text[:500] if text else response.reason_phrase


class Sender:
    """POSTs protobuf requests with retries (tenacity) honouring Retry-After, one at a time."""

    def __init__(
        self,
        api: str,
        api_key: str | None,
        options: ImportOptions,
        on_retry: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api = api
        self.url = traces_url(api)
        self.options = options
        self._on_retry = on_retry or (lambda _msg: None)
        self._sleep = sleep
        headers = {"Content-Type": "application/x-protobuf", "User-Agent": "steplens-import"}
        if options.gzip:
            headers["Content-Encoding"] = "gzip"
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(headers=headers, timeout=options.timeout_s)
        # exponential from 0.5 s plus up to 0.5 s of jitter (spread clients out), capped at max_wait_s
        self._backoff = wait_exponential(multiplier=0.5, max=options.max_wait_s) + wait_random(0, 0.5)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Sender:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RetryableAnswer) and exc.retry_after is not None:
            return min(exc.retry_after, self.options.max_wait_s)
        return min(self._backoff(state), self.options.max_wait_s)

    def _before_sleep(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        what = str(exc) if isinstance(exc, RetryableAnswer) else f"{type(exc).__name__}: {exc}"
        self._on_retry(f"attempt {state.attempt_number} failed ({what}); retrying in {wait:.1f} s")

    def post(self, request: ExportTraceServiceRequest, retry: bool = True) -> httpx.Response:
        """The server's final answer (200 or a non-retryable error). Raises RetryableAnswer or an
        httpx transport error once retries are exhausted (or at once when `retry` is False)."""
        body = request.SerializeToString()
        if self.options.gzip:
            body = gzip.compress(body, compresslevel=1)
        attempts = self.options.max_attempts if retry else 1
        retrying = Retrying(
            stop=stop_after_attempt(max(1, attempts)) | stop_after_delay(self.options.max_retry_s),
            wait=self._wait,
            retry=retry_if_exception_type(_RETRY_ERRORS),
            before_sleep=self._before_sleep,
            sleep=self._sleep,
            reraise=True,
        )
        return retrying(self._post_once, body)

    def _post_once(self, body: bytes) -> httpx.Response:
        response = self._client.post(self.url, content=body)
        if response.status_code in _RETRY_STATUS:
            raise RetryableAnswer(
                response.status_code, answer_message(response), parse_retry_after(response.headers.get("retry-after"))
            )
        return response

    def check(self) -> None:
        """Send an empty export: proves the server is up, speaks OTLP and takes our key, before any
        file is read. Raises Fatal with what to do otherwise."""
        try:
            response = self.post(ExportTraceServiceRequest(), retry=False)
        except httpx.ConnectError as exc:
            raise Fatal(
                f"cannot reach the steplens server at {self.api} ({reason(exc)}). Start it with "
                "`steplens serve` (or pass --api URL of the running server)."
            ) from None
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise Fatal(f"the steplens server at {self.api} did not answer ({reason(exc)}); is it running? "
                        "Start it with `steplens serve`.") from None
        except httpx.HTTPError as exc:  # bad URL, unsupported scheme...
            raise Fatal(f"cannot send to {self.url}: {reason(exc)}; check --api") from None
        except RetryableAnswer:
            return  # up but busy: the import's own retries deal with it
        fatal = fatal_answer(response, self.api)
        if fatal:
            raise Fatal(fatal)
        if response.status_code != 200:
            raise Fatal(f"{self.url} answered HTTP {response.status_code}: {answer_message(response)}")


def reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def fatal_answer(response: httpx.Response, api: str) -> str | None:
    """Answers after which no other request can succeed either."""
    if response.status_code == 401:
        return (f"the server at {api} refused the API key ({answer_message(response)}): set STEPLENS_API_KEY "
                "to a key with the ingest scope")
    if response.status_code == 403:
        return f"the API key in STEPLENS_API_KEY cannot ingest ({answer_message(response)}); use a key with the ingest scope"
    if response.status_code in (404, 405):
        return f"{traces_url(api)} is not an OTLP/HTTP traces endpoint (HTTP {response.status_code}); check --api"
    return None

