"""`steplens sql "SELECT ..."`: run one query through the server's `POST /api/sql` and print it.

Why through the API and not DuckDB directly: the server holds the DuckDB file (one writing process
per file), and the API is where the views are bound to the key's project and the limits hold.

Exit codes: 0 answered (also when a limit cut the answer: a note on stderr says so); 1 the server
refused or could not run the query (400, 504: the message says why); 2 the command could not run
(server unreachable, no such endpoint, a key without the read scope, a server error).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, BinaryIO

import httpx
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ingest.error_console import error_console

EXIT_OK, EXIT_REFUSED, EXIT_ERROR = 0, 1, 2
MAX_CELL = 120  # characters of one value shown in the table (CSV and JSON are never shortened)


def _cell(value: Any) -> str:
    text = "NULL" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _table(answer: dict[str, Any]) -> Table:
    table = Table(show_lines=False, header_style="bold")
    for column in answer["columns"]:
        numeric = any(t in column["type"] for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL"))
        table.add_column(escape(column["name"]), justify="right" if numeric else "left", overflow="fold")
    for row in answer["rows"]:
        table.add_row(*(escape(_cell(v)) for v in row))
    return table


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    detail = body.get("detail", body) if isinstance(body, dict) else body
    return str(detail)[:1000]


def sql_command(
    sql: str,
    api: str,
    fmt: str = "table",
    limit: int | None = None,
    project: str | None = None,
    timeout_s: float = 120.0,
    console: Console | None = None,
    out: BinaryIO | None = None,
) -> int:
    """POST the query (key from STEPLENS_API_KEY); print a table, or stream CSV/JSON to `out` (stdout)."""
    con = console or Console()
    err = error_console() if console is None else console
    sink = out if out is not None else sys.stdout.buffer
    if sql.strip() == "-":
        sql = sys.stdin.read()
    key = os.environ.get("STEPLENS_API_KEY", "").strip()
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body: dict[str, Any] = {"sql": sql, "format": "json" if fmt == "table" else fmt}
    if limit is not None:
        body["limit"] = limit
    if project:
        body["project"] = project
    url = api.rstrip("/") + "/api/sql"
    try:
        with httpx.stream("POST", url, json=body, headers=headers, timeout=timeout_s) as response:
            if response.status_code != 200:
                response.read()
                return _failed(err, response)
            if fmt != "table":
                for chunk in response.iter_bytes():
                    sink.write(chunk)
                sink.flush()
                return EXIT_OK
            answer = json.loads(response.read())
    except httpx.HTTPError as exc:
        err.print(f"[bold red]steplens sql:[/] cannot reach {escape(api)}: {escape(type(exc).__name__)} "
                  f"{escape(str(exc))}", highlight=False)
        return EXIT_ERROR
    con.print(_table(answer))
    note = f"{answer['row_count']} row(s)"
    if answer.get("truncated"):
        note += f", cut by the server's {answer['truncated_by'].replace('_', ' ')} (ask for less, or a LIMIT)"
    if answer.get("error"):
        note += f"; {answer['error']}"
    err.print(escape(note), highlight=False)
    return EXIT_REFUSED if answer.get("error") else EXIT_OK


def _failed(err: Console, response: httpx.Response) -> int:
    status, detail = response.status_code, _detail(response)
    if status in (400, 413, 422, 504):
        err.print(f"[bold red]steplens sql:[/] {escape(detail)}", highlight=False)
        return EXIT_REFUSED
    if status == 404:
        detail = "this server has no /api/sql (older than this client?)"
    elif status in (401, 403):
        detail = f"{detail} (set STEPLENS_API_KEY to a key with the read scope)"
    err.print(f"[bold red]steplens sql:[/] HTTP {status}: {escape(detail)}", highlight=False)
    return EXIT_ERROR
