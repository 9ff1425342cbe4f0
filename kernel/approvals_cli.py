"""The body of `steplens approvals list|approve|reject`: a reviewer's terminal on `/api/approvals`.

Kept apart from `kernel.approvals` (the agent side) because a reviewer needs a table and exit
codes, an agent needs neither. Exit codes: 0 done, 1 the server refused (unknown id, already
decided, missing scope), 2 no server answers.
"""

from __future__ import annotations

import json
import os

import httpx
from rich.console import Console
from rich.table import Table

from kernel.approvals import API_PATH

API_KEY_ENV = "STEPLENS_API_KEY"


def _headers() -> dict[str, str]:
    key = os.environ.get(API_KEY_ENV)
    return {"x-api-key": key} if key else {}


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict):
        if isinstance(body.get("error"), dict):
            return str(body["error"].get("message"))
        if "detail" in body:
            return str(body["detail"])
    return str(body)[:300]


def _request(console: Console, method: str, url: str, **kwargs: object) -> httpx.Response | int:
    try:
        response = httpx.request(method, url, headers=_headers(), timeout=10, **kwargs)  # type: ignore[arg-type]
    except httpx.HTTPError as exc:
        console.print(f"[red]no steplens server answers at {url} ({type(exc).__name__}: {exc})[/red]")
        return 2
    if response.status_code >= 400:
        hint = " (set STEPLENS_API_KEY to a key with that scope)" if response.status_code in (401, 403) else ""
        console.print(f"[red]{method} {url} answered {response.status_code}: {_detail(response)}{hint}[/red]")
        return 1
    return response


def list_command(api: str, status: str | None = "pending", limit: int = 100, console: Console | None = None) -> int:
    console = console or Console()
    params: dict[str, object] = {"limit": limit}
    if status and status != "all":
        params["status"] = status
    response = _request(console, "GET", api.rstrip("/") + API_PATH, params=params)
    if isinstance(response, int):
        return response
    approvals = response.json().get("approvals", [])
    table = Table(title=f"approvals ({status or 'all'}): {len(approvals)}")
    for column in ("id", "status", "created (UTC)", "agent", "call", "risk", "trace", "decision"):
        table.add_column(column, overflow="fold")
    for a in approvals:
        agent = f"{a.get('agent') or '?'} {a.get('agent_version') or ''}".strip()
        call = f"{a['tool']} {json.dumps(a.get('arguments') or {}, ensure_ascii=False)[:160]}"
        decision = " ".join(x for x in (a.get("decided_by"), a.get("reason")) if x)
        table.add_row(a["approval_id"], a["status"], str(a["created_at"])[:19].replace("T", " "), agent, call,
                      a.get("risk") or "", a.get("trace_id") or "", decision)
    console.print(table)
    return 0


def decide_command(api: str, approval_id: str, approve: bool, reason: str | None = None, by: str | None = None,
                   console: Console | None = None) -> int:
    console = console or Console()
    verb = "approve" if approve else "reject"
    body = {k: v for k, v in (("reason", reason), ("by", by)) if v}
    response = _request(console, "POST", f"{api.rstrip('/')}{API_PATH}/{approval_id}/{verb}", json=body)
    if isinstance(response, int):
        return response
    a = response.json()
    console.print(f"approval {a['approval_id']}: {a['status']} ({a['tool']} for {a.get('agent') or '?'}"
                  f"{', trace ' + a['trace_id'] if a.get('trace_id') else ''})")
    return 0
