"""`steplens alerts check`: evaluate every rule once through the server's API, for cron and CI.

Exit codes: 0 nothing firing; 1 at least one alert firing; 2 the check itself failed (server
unreachable, refused, or a rule could not be evaluated), so a broken check never passes as "all clear".
"""

from __future__ import annotations

import os

import httpx
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ingest.error_console import error_console

EXIT_OK, EXIT_FIRING, EXIT_ERROR = 0, 1, 2


def check_command(api: str, timeout_s: float = 120.0, console: Console | None = None) -> int:
    """POST /api/alerts/check (admin scope; key from STEPLENS_API_KEY), print the result, return the exit code."""
    out = console or Console()
    err = error_console() if console is None else console
    key = os.environ.get("STEPLENS_API_KEY", "").strip()
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = api.rstrip("/") + "/api/alerts/check"
    try:
        response = httpx.post(url, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        err.print(f"[bold red]steplens alerts check:[/] cannot reach {escape(api)}: {escape(type(exc).__name__)} "
                  f"{escape(str(exc))}", highlight=False)
        return EXIT_ERROR
    if response.status_code != 200:
        detail = response.text[:500]
        err.print(f"[bold red]steplens alerts check:[/] HTTP {response.status_code}: {escape(detail)}", highlight=False)
        return EXIT_ERROR
    body = response.json()
    firing = body.get("firing", [])
    errors = body.get("errors", {})
    out.print(f"evaluated {body.get('evaluated', 0)} rule(s): {len(firing)} firing, {len(errors)} error(s)")
    if body.get("recorded") is False:
        out.print("not recorded or notified by this node (an api node): the worker records transitions and notifies")
    if firing:
        table = Table("rule", "subject", "since", "value", "summary", title="firing")
        for f in firing:
            value = f.get("value")
            table.add_row(escape(f["rule"]), escape(f["subject"]), str(f.get("since", "")),
                          "" if value is None else f"{value:.4g}", escape(f.get("summary") or ""))
        out.print(table)
    for name, reason in errors.items():
        err.print(f"[red]rule {escape(name)} could not be evaluated:[/] {escape(reason)}", highlight=False)
    if errors:
        return EXIT_ERROR
    return EXIT_FIRING if firing else EXIT_OK
