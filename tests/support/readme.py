"""Run the README's code blocks as users would: each test reads its section's Python blocks from
README.md, points the documented endpoint at the test's server and runs the code as a separate
process, so a README that drifts from the public API fails a test instead of a user."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
README_ENDPOINT = "http://127.0.0.1:4318"  # the address every README example sends to


def python_blocks(section: str) -> list[str]:
    """The ```python blocks of the README section titled `section`, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [part.split("```", 1)[0] for part in body.split("```python\n")[1:]]


def run_example(code: str, server_url: str, *, cwd: Path = ROOT, env: dict[str, str] | None = None,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter with the README's endpoint replaced by `server_url`;
    fails the test when the example does not name that endpoint or exits non-zero."""
    assert README_ENDPOINT in code, "the README example must send to the documented endpoint"
    out = subprocess.run([sys.executable, "-c", code.replace(README_ENDPOINT, server_url)],
                         capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    assert out.returncode == 0, out.stderr
    return out


def fetch_trace(server_url: str, trace_id: str, wait_s: float = 10) -> dict[str, Any]:
    """`GET /api/traces/{trace_id}`, retried while it is not stored yet (404) for up to `wait_s`."""
    with httpx.Client(base_url=server_url, timeout=10) as client:
        deadline = time.monotonic() + wait_s
        while (resp := client.get(f"/api/traces/{trace_id}")).status_code == 404 and time.monotonic() < deadline:
            time.sleep(0.1)
        return resp.raise_for_status().json()
