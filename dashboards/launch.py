"""`steplens ui`: start Streamlit on the dashboards app with safe settings.

Why these flags: headless (no browser popping up on a server), no usage statistics sent
anywhere, loopback unless told otherwise, no error details in the browser (a traceback can leak
paths and data; the app shows a clear message instead), no file watcher (nothing to reload in
production, and watching costs CPU).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dashboards.auth import is_loopback
from dashboards.config import DEFAULT_API

APP = Path(__file__).with_name("app.py")


def streamlit_command(port: int = 8501, address: str = "127.0.0.1", python: str = sys.executable) -> list[str]:
    return [
        python, "-m", "streamlit", "run", str(APP),
        "--server.headless", "true",
        "--server.address", address,
        "--server.port", str(port),
        "--server.fileWatcherType", "none",
        "--server.runOnSave", "false",
        "--browser.gatherUsageStats", "false",
        "--client.showErrorDetails", "none",
        "--client.toolbarMode", "minimal",
        "--global.developmentMode", "false",
    ]


def login_problem(address: str, environ: dict[str, str] | None = None, cwd: Path | None = None) -> str | None:
    """Why the UI must not start on `address` (beyond loopback without any login), or None."""
    env = os.environ if environ is None else environ
    if is_loopback(address):
        return None
    if env.get("STEPLENS_UI_PASSWORD", "").strip():
        return None
    secrets = [(cwd or Path.cwd()) / ".streamlit" / "secrets.toml", Path.home() / ".streamlit" / "secrets.toml"]
    if any(p.is_file() and "[auth]" in p.read_text(errors="replace") for p in secrets):
        return None
    return (
        f"refusing to serve the dashboards on {address}, beyond localhost, without a login: set "
        "STEPLENS_UI_PASSWORD, or configure OIDC under [auth] in .streamlit/secrets.toml, or use --address 127.0.0.1"
    )


def run_ui(api: str = DEFAULT_API, port: int = 8501, address: str = "127.0.0.1") -> int:
    """Replace this process with Streamlit (so Ctrl-C and SIGTERM reach it directly).

    The API key is passed on through the environment (`STEPLENS_API_KEY`), never on the command
    line, where any local user could read it in the process list.
    """
    problem = login_problem(address)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    env = {**os.environ, "STEPLENS_API_URL": api}
    cmd = streamlit_command(port, address)
    print(f"steplens dashboards on http://{address}:{port} (query API {api})", file=sys.stderr, flush=True)
    os.execve(cmd[0], cmd, env)
    return 0  # not reached
