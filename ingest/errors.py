"""Every error the ingest server answers with, and the ONE table mapping each to HTTP and gRPC.

Why one table: the HTTP and gRPC receivers (and the store, which raises `Overloaded`) must agree on
what a client may retry. The codes follow the OTLP specification's failure rules, like the OTel
Collector's receivers:

- HTTP: only 429/502/503/504 are retryable; 503 carries `Retry-After`. 400/401/403/408/413/415/500 are not.
- gRPC: UNAVAILABLE is retryable (with `RetryInfo` giving the delay); RESOURCE_EXHAUSTED is retryable
  only when the server sends `RetryInfo`, so "too large" is answered RESOURCE_EXHAUSTED *without* it
  (gRPC's own message-size limit uses the same code); INVALID_ARGUMENT, UNAUTHENTICATED,
  PERMISSION_DENIED and INTERNAL are final.

Errors are data: each carries a short machine `reason` (used as a metrics label) and a human
message that is safe to send back (never a key, never a stack trace).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import grpc


@dataclass(frozen=True)
class ErrorMapping:
    """How one error class is answered on each transport."""

    http_status: int
    grpc_code: grpc.StatusCode
    retryable: bool


class IngestError(Exception):
    """Base of every error the receiver turns into an answer. Subclasses only set `reason`."""

    reason: ClassVar[str] = "internal"

    def __init__(self, message: str) -> None:
        # The message goes back to the client in a protobuf string or JSON: it must be valid UTF-8
        # even when it quotes hostile input (a lone surrogate is shown as the escape `\ud800`).
        message = message.encode("utf-8", "backslashreplace").decode("utf-8")
        super().__init__(message)
        self.message = message

    @property
    def mapping(self) -> ErrorMapping:
        return error_mapping(type(self))


class Malformed(IngestError):
    """The body cannot be decoded (bad protobuf/JSON, broken gzip/deflate stream)."""

    reason = "malformed"


class UnsupportedMediaType(IngestError):
    """Content-Type or Content-Encoding the receiver does not speak."""

    reason = "unsupported_media_type"


class TooLarge(IngestError):
    """Body over `max_body_bytes`, raw or after decompression."""

    reason = "too_large"


class BodyTimeout(IngestError):
    """The request body did not arrive within `body_read_timeout_s` (ingest/body_timeout.py)."""

    reason = "body_timeout"


class Unauthenticated(IngestError):
    """No API key, or an unknown one."""

    reason = "unauthenticated"


class Forbidden(IngestError):
    """A known key without the scope the route needs."""

    reason = "forbidden"


class Overloaded(IngestError):
    """The bounded queue is full: the client must retry after `retry_after` seconds (1..5)."""

    reason = "overloaded"

    def __init__(self, message: str = "server overloaded, retry later", retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = min(5, max(1, int(retry_after)))


class StorageUnavailable(Overloaded):
    """The spool or the database cannot be written right now (disk full, I/O error): nothing was
    acknowledged, and the client retries after `retry_after` seconds, like any overload."""

    reason = "storage_unavailable"


class WrongRole(IngestError):
    """The route exists, but on nodes of another role (`steplens serve --role`, ingest/roles.py)."""

    reason = "wrong_role"


class Internal(IngestError):
    """A bug or an unexpected failure of a dependency; logged with its traceback server-side."""

    reason = "internal"


class NotAvailable(IngestError):
    """The configured store has no implementation of this query yet (answered 501, never 500)."""

    reason = "not_available"


class ConfigError(Exception):
    """The server cannot start with this configuration; the message says what to change."""


class PortInUse(ConfigError):
    """The requested port is taken by another process."""


ERROR_TABLE: dict[type[IngestError], ErrorMapping] = {
    Malformed: ErrorMapping(400, grpc.StatusCode.INVALID_ARGUMENT, retryable=False),
    UnsupportedMediaType: ErrorMapping(415, grpc.StatusCode.INVALID_ARGUMENT, retryable=False),
    TooLarge: ErrorMapping(413, grpc.StatusCode.RESOURCE_EXHAUSTED, retryable=False),
    BodyTimeout: ErrorMapping(408, grpc.StatusCode.DEADLINE_EXCEEDED, retryable=False),
    Unauthenticated: ErrorMapping(401, grpc.StatusCode.UNAUTHENTICATED, retryable=False),
    Forbidden: ErrorMapping(403, grpc.StatusCode.PERMISSION_DENIED, retryable=False),
    Overloaded: ErrorMapping(503, grpc.StatusCode.UNAVAILABLE, retryable=True),
    Internal: ErrorMapping(500, grpc.StatusCode.INTERNAL, retryable=False),
    WrongRole: ErrorMapping(404, grpc.StatusCode.UNIMPLEMENTED, retryable=False),
    NotAvailable: ErrorMapping(501, grpc.StatusCode.UNIMPLEMENTED, retryable=False),
}


def error_mapping(cls: type[IngestError]) -> ErrorMapping:
    """The mapping of `cls` or of its nearest mapped ancestor (subclasses inherit their answer)."""
    for klass in cls.__mro__:
        if klass in ERROR_TABLE:
            return ERROR_TABLE[klass]  # type: ignore[index]
    return ERROR_TABLE[Internal]
