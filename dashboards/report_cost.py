"""`steplens report cost`: the cost attribution of `GET /api/cost` printed as CSV, Markdown or JSON.

Why through the query API (not DuckDB): the server is the only process that may open the store,
and the API applies the caller's key and project scope exactly as the dashboards see it. CSV comes
from the server itself (`format=csv`) so the CLI and a browser download are byte-identical.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Literal, TextIO

import httpx

ReportFormat = Literal["csv", "md", "json"]
TIMEOUT_S = 30.0
START_HINT = "start it with `steplens serve`, or pass --api URL"
MD_COLUMNS = ("key", "runs", "llm_calls", "input_tokens", "output_tokens", "cost_usd")


class ReportError(Exception):
    """What went wrong, worded for the terminal (never a traceback, never the key)."""


def fetch(api: str, by: str, since: str | None, fmt: ReportFormat, project: str | None = None) -> httpx.Response:
    params: dict[str, str] = {"group_by": by, "format": "csv" if fmt == "csv" else "json"}
    if since:
        params["since"] = since
    if project:
        params["project"] = project
    headers = {}
    key = os.environ.get("STEPLENS_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = api.rstrip("/") + "/api/cost"
    try:
        response = httpx.get(url, params=params, headers=headers, timeout=TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise ReportError(f"cannot reach the query API at {api} ({type(exc).__name__}); {START_HINT}") from None
    if response.status_code in (401, 403):
        raise ReportError(f"the API refused the key ({response.status_code}): set STEPLENS_API_KEY to a read key")
    if response.status_code == 404:
        raise ReportError(f"{api} has no /api/cost: upgrade the steplens server")
    if response.status_code >= 400:
        raise ReportError(f"the API answered {response.status_code}: {_detail(response)}")
    return response


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    detail = body.get("detail", body) if isinstance(body, dict) else body
    return json.dumps(detail)[:300] if not isinstance(detail, str) else detail[:300]


def _cell(column: str, value: Any) -> str:
    if value is None:
        return "(none)" if column == "key" else ""
    if column == "cost_usd":
        return f"{float(value):.4f}"
    return str(value).replace("|", "\\|")


def to_markdown(report: dict[str, Any]) -> str:
    """A Markdown table of the rows, most expensive first, and a total line."""
    columns = list(MD_COLUMNS)
    if report.get("group_by") == "tool":
        columns += ["direct", "decision", "carry"]
    lines = [
        f"Cost by {report.get('group_by')} (prices as of {report.get('price_table', {}).get('as_of', '?')})",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---" if c == "key" else "---:" for c in columns) + "|",
    ]
    for row in report.get("rows", []):
        cells = [_cell("cost_usd" if c in ("direct", "decision", "carry") else c, row.get(c)) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Total: ${float(report.get('total_cost_usd', 0.0)):.4f}"]
    return "\n".join(lines) + "\n"


def report_cost(
    by: str = "tool",
    since: str | None = "7d",
    fmt: ReportFormat = "md",
    api: str = "http://127.0.0.1:4318",
    project: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Print the report; returns the process exit code (0 ok, 1 the API failed)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        response = fetch(api, by, since, fmt, project)
    except ReportError as exc:
        print(f"steplens report cost: {exc}", file=err)
        return 1
    if fmt == "csv":
        out.write(response.text)
    elif fmt == "json":
        out.write(json.dumps(response.json(), indent=2) + "\n")
    else:
        out.write(to_markdown(response.json()))
    return 0
