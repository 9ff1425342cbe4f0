"""Notification delivery: the server log and webhooks (Slack incoming-webhook compatible JSON).

Why a bounded queue and one worker thread: a slow or dead webhook must never hold up evaluation,
let alone ingest. When the queue is full the notification is dropped WITH an error log line and a
counter (never silently); the event itself is already in the alert_events history.
Retries: connection errors, timeouts, 429 and 5xx are retried with exponential backoff (tenacity);
other 4xx mean the request itself is wrong and are not retried.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from ingest.alerts.rules import LOG_CHANNEL, AlertChannelConfig
from ingest.alerts.state import AlertEvent, EventKind

log = logging.getLogger(__name__)

QUEUE_SIZE = 1000
_ICONS = {EventKind.FIRING: ":rotating_light:", EventKind.RENOTIFY: ":repeat:", EventKind.RESOLVED: ":white_check_mark:"}


class DeliveryError(Exception):
    def __init__(self, message: str, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, httpx.TransportError) or (isinstance(exc, DeliveryError) and exc.retryable)


def evidence_links(event: AlertEvent, template: str | None) -> list[str]:
    return [template.format(trace_id=t) if template else t for t in event.evidence]


def slack_body(event: AlertEvent, template: str | None = None) -> dict[str, Any]:
    """`text` and `blocks` are what Slack renders; `steplens` carries the event for other receivers
    (Slack ignores unknown top-level fields)."""
    title = f"{_ICONS.get(event.kind, '')} [{event.severity}] {event.rule} ({event.subject}): {event.kind.value}"
    links = evidence_links(event, template)
    lines = [title.strip(), event.summary]
    if links:
        lines.append("Evidence: " + ", ".join(f"<{u}>" if "://" in u else u for u in links))
    text = "\n".join(lines)
    return {
        "text": text,
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
        "steplens": {
            "event_id": event.event_id, "time": event.time.isoformat() + "Z", "rule": event.rule,
            "subject": event.subject, "kind": event.kind.value, "severity": event.severity, "summary": event.summary,
            "value": event.value, "details": event.details, "evidence": event.evidence, "evidence_links": links,
        },
    }


@dataclass
class DeliveryStats:
    delivered: int = 0
    failed: int = 0
    dropped: int = 0
    attempts: int = 0


class Dispatcher:
    """Delivers events to their channels on its own thread; `submit` never blocks."""

    def __init__(self, channels: list[AlertChannelConfig], queue_size: int = QUEUE_SIZE) -> None:
        self._channels = {c.name: c for c in channels}
        self._queue: queue.Queue[AlertEvent | None] = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self.stats = DeliveryStats()
        self._thread: threading.Thread | None = None
        self._client: httpx.Client | None = None

    def start(self) -> None:
        if self._thread is None:
            self._client = httpx.Client()
            self._thread = threading.Thread(target=self._run, name="steplens-alert-dispatch", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Deliver what is queued (within `timeout`), then stop."""
        if self._thread is None:
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            log.error("alert dispatcher queue still full at shutdown; undelivered notifications are in alert_events")
        self._thread.join(timeout)
        self._thread = None
        if self._client is not None:
            self._client.close()

    def submit(self, event: AlertEvent) -> bool:
        """Queue `event` for its channels; False (logged, counted) when the queue is full."""
        try:
            self._queue.put_nowait(event)
            return True
        except queue.Full:
            with self._lock:
                self.stats.dropped += 1
            log.error("alert notification queue full: %s %s (%s) not delivered; it is in the alert history",
                      event.rule, event.kind.value, event.subject)
            return False

    def wait_idle(self, timeout: float) -> bool:
        """True once everything submitted so far has been handled (tests, `alerts check`)."""
        done = threading.Event()

        def waiter() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=waiter, daemon=True).start()
        return done.wait(timeout)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            try:
                if event is None:
                    return
                for name in event.channels:
                    self._deliver(name, event)
            except Exception:  # noqa: BLE001 - one bad event must not stop later notifications
                log.exception("alert dispatch failed")
            finally:
                self._queue.task_done()

    def _deliver(self, name: str, event: AlertEvent) -> None:
        channel = self._channels.get(name)
        if name == LOG_CHANNEL or (channel is not None and channel.kind == "log"):
            level = logging.INFO if event.kind is EventKind.RESOLVED else logging.WARNING
            log.log(level, "ALERT %s [%s] %s (%s): %s evidence=%s", event.kind.value, event.severity, event.rule,
                    event.subject, event.summary, ",".join(event.evidence))
            self._count(delivered=1)
            return
        if channel is None:
            log.error("alert %s: unknown channel %r", event.rule, name)
            self._count(failed=1)
            return
        try:
            self._post(channel, event)
        except Exception as exc:  # noqa: BLE001 - logged and counted: errors are data
            log.error("alert %s (%s): webhook channel %r failed after retries: %s", event.rule, event.kind.value,
                      name, exc)
            self._count(failed=1)
        else:
            self._count(delivered=1)

    def _post(self, channel: AlertChannelConfig, event: AlertEvent) -> None:
        url = os.environ.get(channel.url_env, "") if channel.url_env else channel.url
        if not url:
            raise DeliveryError(f"no webhook URL (set {channel.url_env or 'url'})", retryable=False)
        body = slack_body(event, channel.evidence_url)
        assert self._client is not None

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.warning("webhook %r attempt %d failed (%s); retrying", channel.name, state.attempt_number, exc)

        for attempt in Retrying(
            stop=stop_after_attempt(channel.max_attempts),
            wait=wait_exponential(multiplier=channel.backoff_s, max=30),
            retry=retry_if_exception(_retryable),
            before_sleep=before_sleep,
            reraise=True,
        ):
            with attempt:
                self._count(attempts=1)
                response = self._client.post(url, json=body, timeout=channel.timeout_s)
                if response.status_code >= 300:
                    # Never log the URL: a Slack webhook URL is a credential.
                    raise DeliveryError(
                        f"HTTP {response.status_code}", retryable=response.status_code == 429 or response.status_code >= 500
                    )

    def _count(self, delivered: int = 0, failed: int = 0, attempts: int = 0) -> None:
        with self._lock:
            self.stats.delivered += delivered
            self.stats.failed += failed
            self.stats.attempts += attempts
