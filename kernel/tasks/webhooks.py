"""A task's webhook: one signed JSON POST when the task ends, retried with exponential backoff.

The body is the task as `TaskQueue.status` answers it (`Task.webhook_payload`). With a secret,
`X-Steplens-Signature: sha256=<hex>` is the HMAC-SHA256 of `<timestamp>.<body>` under it, the
timestamp being `X-Steplens-Timestamp` (unix seconds), so a receiver can refuse forgeries and old
replays (`verify_signature`). A 2xx answer delivers it. A transport error, a timeout, 408, 425,
429 or a 5xx is retried (tenacity, exponential backoff); any other 4xx is the receiver saying no
and is not. When no attempt succeeds the task's webhook ends `webhook_failed`, with the attempts
and the last error on the task.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from kernel.tasks.model import Task, WebhookStatus

SIGNATURE_HEADER = "X-Steplens-Signature"
TIMESTAMP_HEADER = "X-Steplens-Timestamp"
TASK_ID_HEADER = "X-Steplens-Task-Id"
_RETRIED_STATUS = frozenset({408, 425, 429})


@dataclass(frozen=True)
class WebhookPolicy:
    """How hard to try. The defaults wait 1, 2, 4, 8, 16 s between six attempts (~31 s in all)."""

    secret: str | None = field(default=None, repr=False)
    max_attempts: int = 6
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")


class _Retry(Exception):  # noqa: N818 - tenacity's signal that this attempt may be tried again
    pass


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value for `body` sent at `timestamp`."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify_signature(secret: str, timestamp: str, body: bytes, signature: str, *,
                     max_age_s: float = 300, now: float | None = None) -> bool:
    """For receivers: the signature is ours and the delivery is at most `max_age_s` old."""
    try:
        age = (time.time() if now is None else now) - float(timestamp)
    except ValueError:
        return False
    return abs(age) <= max_age_s and hmac.compare_digest(sign(secret, timestamp, body), signature)


def body_of(task: Task) -> bytes:
    return json.dumps(task.webhook_payload(), ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


async def deliver(task: Task, policy: WebhookPolicy, client: httpx.AsyncClient,
                  on_attempt: Callable[[int, str | None], None]) -> tuple[WebhookStatus, str | None]:
    """POST the task's webhook until delivered or out of attempts; `on_attempt(n, error)` after each
    attempt (error None: delivered). Never raises: (delivered | webhook_failed, last error)."""
    assert task.webhook_url is not None
    body = body_of(task)
    last_error: str | None = None
    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_attempts),
        wait=wait_exponential(multiplier=policy.backoff_initial_s, min=policy.backoff_initial_s,
                              max=policy.backoff_max_s),
        retry=retry_if_exception_type(_Retry),
        reraise=True,
    )
    try:
        async for attempt in retrying:
            with attempt:
                number = attempt.retry_state.attempt_number
                last_error, again = await _post_once(task, body, policy, client)
                on_attempt(number, last_error)
                if again:
                    raise _Retry(last_error)
    except _Retry:
        pass
    if last_error is None:
        return WebhookStatus.DELIVERED, None
    return WebhookStatus.WEBHOOK_FAILED, last_error


async def _post_once(task: Task, body: bytes, policy: WebhookPolicy,
                     client: httpx.AsyncClient) -> tuple[str | None, bool]:
    """One attempt: (None, False) when delivered, else (the error, whether to try again)."""
    timestamp = str(int(time.time()))
    headers = {"content-type": "application/json", TIMESTAMP_HEADER: timestamp, TASK_ID_HEADER: task.task_id}
    if policy.secret:
        headers[SIGNATURE_HEADER] = sign(policy.secret, timestamp, body)
    try:
        response = await client.post(task.webhook_url or "", content=body, headers=headers, timeout=policy.timeout_s)
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__} posting to {task.webhook_url}: {exc}"[:500], True
    if response.is_success:
        return None, False
    error = f"{task.webhook_url} answered {response.status_code}: {response.text[:200]}"
    return error, response.status_code >= 500 or response.status_code in _RETRIED_STATUS
