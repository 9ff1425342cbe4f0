"""The ONE classification of load failures: retry it, reopen the database, set the record aside, or stop.

Why one table: an error the environment causes (a full disk, an I/O error, DuckDB out of memory, and
the "Current transaction is aborted" that follows an out-of-memory inside a transaction) says
nothing about the record being loaded. Dead-lettering on such an error loses acknowledged spans that
load fine a minute later. Only a record that fails on its own (a parse, normalize or data error,
reproduced by loading it alone) is poison. DuckDB raises environmental failures under several
exception classes (a commit that hits ENOSPC is a `TransactionException`, an invalidating checkpoint
failure an `IOException` or a `FatalException`), so the class alone does not decide: the message's
known causes do, checked before the class.

- `TRANSIENT`: retry the same work with backoff; the records stay queued and in the spool.
- `REOPEN`: the database instance is invalidated (DuckDB does that after a failed checkpoint or
  WAL write); close it and open the file again (the WAL replays what was committed), then retry.
- `POISON`: the record itself is bad; set it aside in the dead-letter directory.
- `FATAL`: a bug or corruption no retry fixes; loading stops, the spool keeps everything.
"""

from __future__ import annotations

import enum
import errno

import duckdb


class Failure(enum.Enum):
    TRANSIENT = "transient"
    REOPEN = "reopen"
    POISON = "poison"
    FATAL = "fatal"


# Message fragments (lowercase) naming an environmental cause, whatever exception class carries them.
_INVALIDATED = ("database has been invalidated", "the database must be restarted")
_ENVIRONMENT = (
    "no space left on device",
    "disk quota exceeded",
    "input/output error",
    "read-only file system",
    "could not write file",
    "could not read from file",
    "could not fsync",
    "could not truncate",
    "could not open file",
    "too many open files",
    "out of memory",
    "failed to allocate",
    "current transaction is aborted",
)
_ENV_ERRNOS = {errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EROFS, errno.ENOMEM, errno.EMFILE, errno.ENFILE}

# The exception class decides only when the message names no known cause.
_BY_CLASS: tuple[tuple[type[BaseException], Failure], ...] = (
    (duckdb.OutOfMemoryException, Failure.TRANSIENT),
    (duckdb.IOException, Failure.TRANSIENT),
    (duckdb.FatalException, Failure.FATAL),
    (duckdb.InternalException, Failure.FATAL),
    (MemoryError, Failure.TRANSIENT),
    (OSError, Failure.TRANSIENT),
    (duckdb.Error, Failure.POISON),
)


# ClickHouse (clickhouse-connect or chDB): the server is down, refusing, overloaded or out of room;
# its error codes by name as they appear in the message.
_CLICKHOUSE_ENVIRONMENT = (
    "connection refused",
    "connection reset",
    "timed out",
    "timeout",
    "network is unreachable",
    "name or service not known",
    "temporary failure in name resolution",
    "too_many_simultaneous_queries",
    "too_many_parts",
    "memory_limit_exceeded",
    "not_enough_space",
    "table_is_read_only",
    "all_connection_tries_failed",
    "socket_timeout",
    "network_error",
    "keeper_exception",
    "unknown_database",  # a server recreated without its schema: retried until the operator migrates
)


def _clickhouse_failure(exc: BaseException) -> Failure | None:
    """The class of a ClickHouse client error, None when `exc` is not one. A server-side error that
    names no environmental cause is the data's (poison); the transport failing is the environment's."""
    module = type(exc).__module__
    if not (module.startswith("clickhouse_connect") or module.startswith("chdb")):
        return None
    message = str(exc).lower()
    if any(fragment in message for fragment in _CLICKHOUSE_ENVIRONMENT + _ENVIRONMENT):
        return Failure.TRANSIENT
    name = type(exc).__name__
    if name in ("OperationalError", "StreamFailureError", "StreamCompleteException"):
        return Failure.TRANSIENT  # clickhouse-connect: the connection or stream failed
    return Failure.POISON


def classify(exc: BaseException) -> Failure:
    """What the writer does about `exc`, raised while loading, normalizing or setting a record aside."""
    message = str(exc).lower()
    clickhouse = _clickhouse_failure(exc)
    if clickhouse is not None:
        return clickhouse
    if any(fragment in message for fragment in _INVALIDATED):
        return Failure.REOPEN
    if isinstance(exc, OSError) and exc.errno in _ENV_ERRNOS:
        return Failure.TRANSIENT
    if isinstance(exc, duckdb.Error) and any(fragment in message for fragment in _ENVIRONMENT):
        # a FatalException about the disk invalidated the instance: only a reopen brings it back
        return Failure.REOPEN if isinstance(exc, duckdb.FatalException) else Failure.TRANSIENT
    for cls, failure in _BY_CLASS:
        if isinstance(exc, cls):
            return failure
    return Failure.POISON  # a normalizer exception (ValueError, KeyError...): the record's own fault


def environmental(exc: BaseException) -> bool:
    """True for a failure that is the environment's (retry or reopen), never the record's."""
    return classify(exc) in (Failure.TRANSIENT, Failure.REOPEN)
