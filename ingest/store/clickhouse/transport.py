"""How SQL reaches ClickHouse: embedded chDB or a server over HTTP(S), behind one tiny protocol.

Why a seam this small: the backend's SQL is the same on both (chDB is the ClickHouse engine in
process), so tests run every statement on chDB and the only code not executed without a server is
`HttpTransport`, a few lines over clickhouse-connect. Parameters are always server-side typed
placeholders (`{p0:String}`), never formatted into the SQL.
"""

from __future__ import annotations

import threading
from datetime import date, datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

import pyarrow as pa

Params = dict[str, Any]
Settings = dict[str, Any]


class Transport(Protocol):
    """The three operations the backend needs; each raises the client's own error on failure
    (classified by ingest/store/failures.py)."""

    def query_arrow(self, sql: str, params: Params | None = None, settings: Settings | None = None) -> pa.Table: ...

    def command(self, sql: str, params: Params | None = None, settings: Settings | None = None) -> None: ...

    def insert_arrow(self, table: str, arrow_table: pa.Table, settings: Settings | None = None) -> None: ...

    def close(self) -> None: ...


def _literal(value: Any, nested: bool) -> str:
    """A value in ClickHouse's text format for query parameters (what the HTTP interface takes):
    strings escaped (and quoted inside arrays), NULL as \\N."""
    if value is None:
        return "NULL" if nested else "\\N"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            from datetime import UTC

            value = value.astimezone(UTC).replace(tzinfo=None)
        text = value.isoformat(sep=" ", timespec="microseconds")
    elif isinstance(value, date):
        text = value.isoformat()
    elif isinstance(value, list | tuple):
        return "[" + ",".join(_literal(v, True) for v in value) + "]"
    else:
        text = str(value)
    # the "escaped" text format: a backslash, newline or tab would end or change the value
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    if nested:
        return "'" + text.replace("'", "\\'") + "'"
    return text


class ChdbTransport:
    """chDB (>= 4.4) on a data directory. One session per process: chDB results are not safe to
    fetch from two threads at once, so every call holds the lock (reads are serialized)."""

    def __init__(self, path: str, database: str = "steplens") -> None:
        from chdb import session

        self._session = session.Session(path)
        self._lock = threading.Lock()
        # unqualified table names in queries resolve to the steplens database, as on a server client
        quoted = "`" + database.replace("`", "``") + "`"
        self._session.query(f"CREATE DATABASE IF NOT EXISTS {quoted}", "CSV")
        self._session.query(f"USE {quoted}", "CSV")

    def _run(self, sql: str, fmt: str, params: Params | None, settings: Settings | None) -> Any:
        text_params = {k: _literal(v, False) for k, v in (params or {}).items()}
        with self._lock:
            names = []
            try:
                for name, value in (settings or {}).items():
                    self._session.query(f"SET {name} = {{v:String}}", "CSV", params={"v": _literal(value, False)})
                    names.append(name)
                return self._session.query(sql, fmt, params=text_params)
            finally:
                for name in names:
                    self._session.query(f"SET {name} = DEFAULT", "CSV")

    def query_arrow(self, sql: str, params: Params | None = None, settings: Settings | None = None) -> pa.Table:
        return self._run(sql, "ArrowTable", params, settings)

    def command(self, sql: str, params: Params | None = None, settings: Settings | None = None) -> None:
        self._run(sql, "CSV", params, settings)

    def insert_arrow(self, table: str, arrow_table: pa.Table, settings: Settings | None = None) -> None:
        # chDB's Python() table function finds the table by variable name in the caller's frames
        rows = arrow_table  # noqa: F841 - read by name by the SQL below
        names = ", ".join("`" + n.replace("`", "``") + "`" for n in arrow_table.column_names)
        self._run(f"INSERT INTO {table} ({names}) SELECT * FROM Python(rows)", "CSV", None, settings)

    def close(self) -> None:
        with self._lock:
            self._session.close()


class HttpTransport:
    """A ClickHouse server over HTTP(S) with clickhouse-connect (>= 0.8)."""

    def __init__(self, url: str, user: str, password: str, database: str, timeout_s: float = 30.0) -> None:
        import clickhouse_connect

        parts = urlsplit(url)
        self._client = clickhouse_connect.get_client(
            host=parts.hostname or "localhost",
            port=parts.port or (8443 if parts.scheme == "https" else 8123),
            secure=parts.scheme == "https",
            username=user,
            password=password,
            send_receive_timeout=timeout_s,
            autogenerate_session_id=False,
        )
        # connect first, then default to `database` (created when missing, like ChdbTransport), so
        # unqualified names in queries resolve there
        quoted = "`" + database.replace("`", "``") + "`"
        self._client.command(f"CREATE DATABASE IF NOT EXISTS {quoted}")
        self._client.database = database

    def query_arrow(self, sql: str, params: Params | None = None, settings: Settings | None = None) -> pa.Table:
        return self._client.query_arrow(sql, parameters=params or {}, settings=settings or {})

    def command(self, sql: str, params: Params | None = None, settings: Settings | None = None) -> None:
        self._client.command(sql, parameters=params or {}, settings=settings or {})

    def insert_arrow(self, table: str, arrow_table: pa.Table, settings: Settings | None = None) -> None:
        self._client.insert_arrow(table, arrow_table, settings=settings or {})

    def close(self) -> None:
        self._client.close()


def open_transport(url: str, user: str = "default", password: str = "", database: str = "steplens") -> Transport:
    """`chdb:///abs/dir` or `chdb://rel/dir` -> embedded chDB on that directory; `http(s)://host:port`
    -> a server."""
    parts = urlsplit(url)
    if parts.scheme == "chdb":
        path = url[len("chdb://") :]  # chdb:///abs/dir or chdb://relative/dir
        if not path:
            raise ValueError("clickhouse_url chdb:///PATH needs a data directory, e.g. chdb:///var/lib/steplens/ch")
        return ChdbTransport(path, database)
    if parts.scheme in ("http", "https"):
        return HttpTransport(url, user, password, database)
    raise ValueError(
        f"clickhouse_url must be http(s)://host:port (a server) or chdb:///path (embedded), not {parts.scheme}://..."
    )
