"""`steplens search reindex` and `steplens search status`: the server's full-text index, through its API.

Why through the API: the server holds the DuckDB file and is the index's only writer; the CLI asks it
to rebuild (operator scope) and reports the lag. Key from STEPLENS_API_KEY. Exit 0 on success, 2 when
the server cannot be reached or refuses.
"""

from __future__ import annotations

import os
import time

import httpx
from rich.console import Console
from rich.markup import escape

EXIT_OK, EXIT_ERROR = 0, 2


def _headers() -> dict[str, str]:
    key = os.environ.get("STEPLENS_API_KEY", "").strip()
    return {"Authorization": f"Bearer {key}"} if key else {}


def _describe(status: dict) -> str:
    if status.get("rebuilding"):
        return f"rebuilding: spans up to {status.get('rebuilt_through')} indexed, {status['pending_spans']} new waiting"
    lag = f"{status['pending_spans']} span(s) waiting, lag {status['lag_s']:.1f} s"
    docs = status.get("documents")
    return lag + (f", {docs} document(s)" if docs is not None else "") + (
        f"; last error: {status['error']}" if status.get("error") else "")


def _call(method: str, api: str, path: str, console: Console) -> dict | None:
    try:
        response = httpx.request(method, api.rstrip("/") + path, headers=_headers(), timeout=90)
    except httpx.HTTPError as exc:
        console.print(f"[bold red]steplens search:[/] cannot reach {escape(api)}: {escape(type(exc).__name__)}",
                      highlight=False)
        return None
    if response.status_code != 200:
        console.print(f"[bold red]steplens search:[/] HTTP {response.status_code}: {escape(response.text[:500])}",
                      highlight=False)
        return None
    return response.json()


def status_command(api: str, console: Console | None = None) -> int:
    out = console or Console()
    status = _call("GET", api, "/api/search/status", out)
    if status is None:
        return EXIT_ERROR
    out.print(escape(_describe(status)), highlight=False)
    return EXIT_OK


def reindex_command(api: str, wait: bool, console: Console | None = None, poll_s: float = 1.0) -> int:
    """POST /api/search/reindex (operator scope); with `wait`, follow the rebuild until it is done."""
    out = console or Console()
    answer = _call("POST", api, "/api/search/reindex", out)
    if answer is None:
        return EXIT_ERROR
    out.print("search index: rebuild started", highlight=False)
    status = answer["index"]
    while wait and (status.get("rebuilding") or status.get("pending_spans")):
        time.sleep(poll_s)
        polled = _call("GET", api, "/api/search/status", out)
        if polled is None:
            return EXIT_ERROR
        status = polled
        out.print(escape(_describe(status)), highlight=False)
    if wait:
        out.print("search index: current", highlight=False)
    return EXIT_OK
