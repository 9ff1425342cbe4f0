"""The importer's typed surface: options, what went wrong where, and the final tally.

Why the summary keeps counts apart from messages: a million bad lines must still be counted
exactly, while only the first `MAX_KEPT` messages are worth holding in memory and printing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MIB = 1024 * 1024
EXIT_OK, EXIT_INCOMPLETE, EXIT_FAILED = 0, 1, 2
MAX_KEPT = 1000  # messages kept in the summary (all are counted)


@dataclass(frozen=True)
class ImportOptions:
    """Knobs of one import. The defaults suit a local server with its default limits (64 MiB body)."""

    max_batch_bytes: int = 4 * MIB  # protobuf size of one request (before gzip)
    max_batch_spans: int = 5000
    max_record_bytes: int = 64 * MIB  # longest JSON line / protobuf message read into memory
    max_attempts: int = 8  # per request, for 429/502/503/504 and connection errors
    max_retry_s: float = 120.0  # give up on one request after this long
    max_wait_s: float = 30.0  # longest single wait (a larger Retry-After is capped to this)
    timeout_s: float = 60.0  # one HTTP exchange (the server answers 200 only once spans are durable)
    gzip: bool = True


@dataclass(frozen=True)
class Problem:
    """Something that could not be read: where (`file:line`, or the file) and why."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass
class ImportSummary:
    """What happened. `spans_rejected` counts the server's partial_success rejections plus spans whose
    ids were unusable before sending; `spans_undelivered` were read but never acknowledged."""

    files: int = 0
    records: int = 0
    requests: int = 0
    spans_read: int = 0
    spans_accepted: int = 0
    spans_rejected: int = 0
    spans_undelivered: int = 0
    bad_records: int = 0
    rejections: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    fatal: str | None = None

    @property
    def ok(self) -> bool:
        return (
            self.fatal is None
            and not self.spans_rejected
            and not self.spans_undelivered
            and not self.bad_records
            and not self.failures
        )

    @property
    def exit_code(self) -> int:
        """0 all stored; 1 the import ran but something was rejected/unreadable; 2 it could not run."""
        if self.fatal is not None:
            return EXIT_FAILED
        return EXIT_OK if self.ok else EXIT_INCOMPLETE

