"""The body of `steplens score add|list`: scores from a terminal, through the HTTP API.

Why through `/api/scores` and not into the database: the server is the one process that writes
DuckDB, and the API applies the key's project, the configs and the durability promise the same way
for every writer. Exit codes: 0 done, 1 the server refused (a config violation, a missing scope),
2 no server answers. The API key comes from STEPLENS_API_KEY (scope annotate to add, read to list).
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
from rich.console import Console
from rich.markup import escape
from rich.table import Table

API_KEY_ENV = "STEPLENS_API_KEY"


def parse_value(text: str, data_type: str | None) -> bool | float | int | str:
    """A value typed on the command line: true/false, a number, else a label (`data_type` decides
    when given: `--type categorical` keeps "5" a label)."""
    lowered = text.strip().lower()
    if data_type in (None, "boolean") and lowered in ("true", "false", "yes", "no"):
        return lowered in ("true", "yes")
    if data_type in (None, "numeric"):
        try:
            number = float(text)
        except ValueError:
            return text
        return int(number) if number.is_integer() and "." not in text and "e" not in lowered else number
    return text


def _headers() -> dict[str, str]:
    key = os.environ.get(API_KEY_ENV)
    return {"x-api-key": key} if key else {}


def _refusal(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict) and isinstance(body.get("detail"), list):
        return "; ".join(f"{'.'.join(str(p) for p in d.get('loc', [])[3:]) or 'score'}: {d.get('msg')}"
                         for d in body["detail"])
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message"))
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])
    return str(body)[:300]


def _call(console: Console, method: str, url: str, **kwargs: Any) -> httpx.Response | int:
    try:
        response = httpx.request(method, url, headers=_headers(), timeout=30, **kwargs)
    except httpx.HTTPError as exc:
        console.print(f"[red]no steplens server answers at {escape(url)} ({type(exc).__name__}: {escape(str(exc))})[/red]")
        return 2
    if response.status_code >= 400:
        hint = f" (set {API_KEY_ENV} to a key with that scope)" if response.status_code in (401, 403) else ""
        console.print(f"[red]{method} {escape(url)} answered {response.status_code}: "
                      f"{escape(_refusal(response))}{hint}[/red]", highlight=False)
        return 1
    return response


def add_command(
    api: str, name: str, value: str, *, trace_id: str | None = None, span_id: str | None = None,
    session_id: str | None = None, data_type: str | None = None, comment: str | None = None,
    author: str | None = None, source: str = "human", score_id: str | None = None, console: Console | None = None,
) -> int:
    console = console or Console()
    score: dict[str, Any] = {"name": name, "value": parse_value(value, data_type), "source": source}
    for key, given in (("trace_id", trace_id), ("span_id", span_id), ("session_id", session_id),
                       ("data_type", data_type), ("comment", comment), ("author", author), ("score_id", score_id)):
        if given is not None:
            score[key] = given
    response = _call(console, "POST", api.rstrip("/") + "/api/scores", json=score)
    if isinstance(response, int):
        return response
    score_id = response.json()["score_ids"][0]
    console.print(f"stored score {escape(name)} = {json.dumps(score['value'])} ({escape(score_id)})", highlight=False)
    return 0


def list_command(api: str, params: dict[str, Any], fmt: str = "table", console: Console | None = None) -> int:
    console = console or Console()
    query = {k: v for k, v in params.items() if v is not None}
    response = _call(console, "GET", api.rstrip("/") + "/api/scores", params=query)
    if isinstance(response, int):
        return response
    scores = response.json()["scores"]
    if fmt == "json":
        print(json.dumps(scores, indent=2))
        return 0
    table = Table(title=f"scores: {len(scores)}")
    for column in ("time (UTC)", "name", "value", "source", "author", "target", "agent", "comment"):
        table.add_column(column, overflow="fold")
    for s in scores:
        target = s.get("trace_id") or f"session {s.get('session_id')}"
        if s.get("span_id"):
            target += f" / {s['span_id']}"
        agent = " ".join(x for x in (s.get("agent"), s.get("version")) if x)
        table.add_row(*(escape(str(x)) for x in (
            str(s["created_at"])[:19].replace("T", " "), s["name"], json.dumps(s["value"]), s["source"],
            s.get("author") or "", target, agent, (s.get("comment") or "")[:120])))
    console.print(table)
    return 0
