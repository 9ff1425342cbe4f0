"""`steplens dataset create` and `steplens dataset get`: datasets from traces through the server's API.

    steplens dataset create ops-v2-failures --filter agent=ops --filter version=v2 --filter ok=false \
        --out ops-v2.jsonl
    steplens eval run ops-v2.jsonl --agent ops --version v2 --endpoint http://127.0.0.1:4318

`--filter KEY=VALUE` takes the parameters of `GET /api/runs` (agent, version, ok, stop_reason,
since, mode, limit, ...), `--trace-id` names runs one by one instead, `--queue` takes the runs people
labelled in an annotation queue. The API key comes from
STEPLENS_API_KEY (create: the annotate or admin scope; get: read).

Exit codes: 0 saved (and written to --out); 1 saved but no run could become a case; 2 refused or
unreachable, with the server's reason.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.markup import escape

from ingest.error_console import error_console

EXIT_OK, EXIT_EMPTY, EXIT_ERROR = 0, 1, 2


def _headers() -> dict[str, str]:
    key = os.environ.get("STEPLENS_API_KEY", "").strip()
    return {"Authorization": f"Bearer {key}"} if key else {}


def parse_filters(pairs: list[str]) -> dict[str, str]:
    """`["agent=ops", "ok=false"]` -> {"agent": "ops", "ok": "false"}; ValueError naming a bad one."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--filter {pair!r} is not KEY=VALUE (e.g. agent=ops, ok=false, since=7d)")
        out[key.strip()] = value.strip()
    return out


def _refused(err: Console, what: str, response: httpx.Response) -> int:
    try:
        detail: Any = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text
    err.print(f"[bold red]steplens dataset {what}:[/] HTTP {response.status_code}: {escape(str(detail)[:800])}",
              highlight=False)
    return EXIT_ERROR


def download(api: str, name: str, out: Path, project: str | None = None, console: Console | None = None) -> int:
    """GET /api/datasets/{name} into `out` (the JSONL `steplens eval run` reads)."""
    err = console or error_console()
    try:
        response = httpx.get(f"{api.rstrip('/')}/api/datasets/{name}", headers=_headers(), timeout=60,
                             params={"project": project} if project else None)
    except httpx.HTTPError as exc:
        err.print(f"[bold red]steplens dataset get:[/] cannot reach {escape(api)}: {escape(str(exc))}", highlight=False)
        return EXIT_ERROR
    if response.status_code != 200:
        return _refused(err, "get", response)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(response.content)
    (console or Console()).print(f"{response.text.count(chr(10))} cases written to {escape(str(out))}")
    return EXIT_OK


def create_command(
    api: str, name: str, filters: list[str], trace_ids: list[str], out: Path | None = None,
    expected: str = "correction_or_answer", tools: str = "sequence", forbidden_tools: list[str] | None = None,
    replace: bool = False, description: str | None = None, console: Console | None = None,
    queue: str | None = None, correction_score: str = "correction",
) -> int:
    """POST /api/datasets, print what was saved and skipped, and write the JSONL to `out` if given."""
    out_console = console or Console()
    err = console or error_console()
    if sum((bool(filters), bool(trace_ids), queue is not None)) != 1:
        err.print("[bold red]steplens dataset create:[/] select runs with one of --filter KEY=VALUE ..., "
                  "--trace-id ID ... or --queue NAME", highlight=False)
        return EXIT_ERROR
    try:
        selection: dict[str, Any] = (
            {"filter": parse_filters(filters)} if filters else {"trace_ids": trace_ids} if trace_ids else {"queue": queue}
        )
    except ValueError as exc:
        err.print(f"[bold red]steplens dataset create:[/] {escape(str(exc))}", highlight=False)
        return EXIT_ERROR
    body = {"name": name, "description": description, "expected": expected, "tools": tools,
            "correction_score": correction_score,
            "forbidden_tools": forbidden_tools or [], "replace": replace, **selection}
    try:
        # a case costs a few small reads: 1000 runs took ~70 s on a loaded 2-core machine
        response = httpx.post(api.rstrip("/") + "/api/datasets", json=body, headers=_headers(), timeout=600)
    except httpx.HTTPError as exc:
        err.print(f"[bold red]steplens dataset create:[/] cannot reach {escape(api)}: {escape(str(exc))}",
                  highlight=False)
        return EXIT_ERROR
    if response.status_code != 200:
        return _refused(err, "create", response)
    saved = response.json()
    out_console.print(f"dataset {escape(saved['name'])} (project {escape(saved['project'])}): {saved['cases']} cases, "
                      f"{len(saved['skipped'])} runs skipped")
    for skip in saved["skipped"][:20]:
        out_console.print(f"  skipped {skip['trace_id']}: {escape(skip['reason'])}", highlight=False)
    if out is not None:
        code = download(api, saved["name"], out, saved["project"], console)
        if code != EXIT_OK:
            return code
    return EXIT_OK if saved["cases"] else EXIT_EMPTY
