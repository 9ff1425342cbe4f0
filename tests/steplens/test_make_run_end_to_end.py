"""`make run` end to end, as `python -m steplens.stack` on a temp directory with free ports: the real
server, the default demo history through real OTLP/HTTP, the dashboards; the query API holds
exactly what the kernel returned; the planted v2 regression is flagged and, with no config, the
built-in alert rules make `steplens alerts check` exit 1; SIGINT stops every process the stack
started; a second start reuses the data without re-running the demo, and its configured rule
replaces the built-in ones and fires to a local webhook; a taken port is reported as one clear
line. The time to the first page with data is logged (not asserted: the machine is shared)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from kernel.examples.demo import run_workload
from steplens import stack

pytestmark = pytest.mark.timeout(480)

RUNS = stack.DEMO_RUNS  # what `make run` sends: the time to first data is the one a user sees
DAYS = stack.DEMO_DAYS
SEED = 0
log = logging.getLogger(__name__)
RULE = "ops v2 takes more steps"
REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Hook(BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict]]]:
    received: list[dict] = []
    handler = type("Hook", (_Hook,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()
    server.server_close()


def _descendants(pid: int) -> set[int]:
    """Every live process below `pid` (from /proc: no psutil needed on Linux)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Stack:
    """`python -m steplens.stack` as a child process, its output in a file (a pipe could fill up)."""

    def __init__(self, workdir: Path, args: list[str]) -> None:
        self.log = workdir / f"stack-{time.monotonic_ns()}.log"
        self.started = time.monotonic()
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "steplens.stack", *args], cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", "STEPLENS_API_KEY": ""},
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_serving(self, timeout_s: float = 400) -> float:
        """Seconds from start until the stack says it is serving (dashboards up, demo sent)."""
        deadline = time.monotonic() + timeout_s
        while "press Ctrl-C to stop everything" not in self.output():
            assert self.proc.poll() is None, f"the stack exited early:\n{self.output()}"
            assert time.monotonic() < deadline, f"the stack did not come up:\n{self.output()}"
            time.sleep(0.3)
        return time.monotonic() - self.started

    def interrupt_and_check_cleanup(self) -> None:
        children = _descendants(self.proc.pid)
        assert len(children) >= 2, children  # at least the server and Streamlit
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.wait(timeout=60) == 0, self.output()
        deadline = time.monotonic() + 10
        while (survivors := {p for p in children if _alive(p)}) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not survivors, f"processes left running after Ctrl-C: {survivors}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            for pid in _descendants(self.proc.pid):
                os.kill(pid, signal.SIGKILL)
            self.proc.kill()
            self.proc.wait()


def _all_runs(api: str) -> list[dict]:
    runs: list[dict] = []
    cursor = None
    while True:
        params = {"limit": 1000, "mode": "all", **({"cursor": cursor} if cursor else {})}
        page = httpx.get(f"{api}/api/runs", params=params, timeout=30).raise_for_status().json()
        runs += page["runs"]
        if not (cursor := page["next"]):
            return runs


def _config(path: Path, hook_url: str) -> Path:
    path.write_text(
        f"""
[[alert_channels]]
name = "hook"
kind = "webhook"
url = "{hook_url}"

[[alerts]]
name = "{RULE}"
kind = "release"
metric = "steps"
agent = "ops"
baseline_version = "v1"
current_version = "v2"
interval = "1h"
channels = ["hook"]
"""
    )
    return path


def _history_end(out: str) -> datetime:
    """The end of the history the demo printed (whole minutes, so the runs can be replanned)."""
    match = re.search(r"history: .* \.\. (\d{4}-\d\d-\d\d \d\d:\d\d) UTC", out)
    assert match, out
    return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


def test_make_run_serves_the_demo_flags_the_regression_alerts_and_stops_everything(tmp_path, webhook) -> None:
    hook_url, received = webhook
    port, ui_port = _free_port(), _free_port()
    api = f"http://127.0.0.1:{port}"
    data = tmp_path / "data"
    args = ["--port", str(port), "--grpc-port", "0", "--ui-port", str(ui_port), "--seed", str(SEED),
            "--data", str(data)]

    first = Stack(tmp_path, args)  # no config: the built-in alert rules
    try:
        serving_s = first.wait_serving()
        first_page = httpx.get(f"http://127.0.0.1:{ui_port}/", timeout=30)
        log.warning("make run: %d demo runs over %g days; first page with data after %.1f s (dashboards and "
                    "API up, history sent)", RUNS, DAYS, serving_s)
        out = first.output()
        assert first_page.status_code == 200
        assert f"dashboards:   http://127.0.0.1:{ui_port}" in out and f"{api}/v1/traces" in out
        assert "demo runs" in out and f"{RUNS}/{RUNS}" in out  # the progress bar got to the end
        assert "planted in this history" in out
        assert httpx.get(f"http://127.0.0.1:{ui_port}/_stcore/health", timeout=10).status_code == 200

        resilient = logging.getLogger("kernel.llm.resilient")  # the planted outage's fallbacks: expected
        level, _ = resilient.level, resilient.setLevel(logging.ERROR)
        try:
            expected = asyncio.run(run_workload(RUNS, seed=SEED, days=DAYS, end=_history_end(out)))
        finally:
            resilient.setLevel(level)
        runs = _all_runs(api)
        assert len(runs) == RUNS == expected.runs
        assert Counter((r["agent"], r["version"]) for r in runs) == Counter(
            {k: g.runs for k, g in expected.groups.items() if g.runs})
        assert Counter(r["stop_reason"] for r in runs) == expected.stop_reasons
        assert Counter(r["mode"] for r in runs) == expected.modes
        assert sum(r["ok"] for r in runs) == expected.ok
        assert sum(r["input_tokens"] for r in runs) == expected.input_tokens
        assert sum(r["output_tokens"] for r in runs) == expected.output_tokens
        # The kernel's run spans declare their cost: never null in the API, even with nothing priced.
        assert all(r["cost_usd"] is not None for r in runs)
        assert sum(r["cost_usd"] for r in runs) == pytest.approx(expected.cost_usd, rel=1e-6)
        days = {r["start_time"][:10] for r in runs}
        assert len(days) >= DAYS, sorted(days)

        report = httpx.get(f"{api}/api/regressions", timeout=60, params={"comparison": "release"}).json()
        steps = [f for f in report["findings"] if f["metric"] == "steps" and f["agent"] == "ops"]
        assert steps and steps[0]["flagged"] and steps[0]["verdict"] == "regression", steps
        assert steps[0]["relative_change"] > 0.1

        rules = httpx.get(f"{api}/api/alerts", timeout=30).raise_for_status().json()["rules"]
        assert rules and all(r["builtin"] for r in rules)
        check = subprocess.run([sys.executable, "-m", "steplens.cli", "alerts", "check", "--api", api], cwd=REPO,
                               capture_output=True, text=True, timeout=120,
                               env={**os.environ, "STEPLENS_API_KEY": "", "COLUMNS": "200"})
        assert check.returncode == 1, check.stdout + check.stderr
        assert "ops" in check.stdout and "ticket" in check.stdout

        # with no config, the stack's evaluator rules score the demo's live runs: the Evaluators page has data
        # (all of them within minutes; here the first hundred of each, to keep the test's time bounded)
        def scored() -> dict[str, dict]:
            found = httpx.get(f"{api}/api/evaluators", timeout=30).raise_for_status().json()["evaluators"]
            return {e["rule"]["name"]: e["summary"] for e in found}

        deadline = time.monotonic() + 180
        summary = scored()
        while len(summary) != 2 or any(s["evaluated"] < 100 for s in summary.values()):
            assert time.monotonic() < deadline, summary
            time.sleep(1)
            summary = scored()
        assert set(summary) == {"no-tool-error", "within-8-steps"}
        assert all(s["errors"] == 0 and s["passed"] + s["failed"] == s["evaluated"] for s in summary.values())

        first.interrupt_and_check_cleanup()
    finally:
        first.kill()
    assert "stopping" in first.output()

    # re-running reuses the data (no second demo batch); a configured rule replaces the built-in ones
    second = Stack(tmp_path, [*args, "--config", str(_config(tmp_path / "steplens.toml", hook_url))])
    try:
        second.wait_serving()
        assert "demo workload: skipped" in second.output()
        assert "demo runs" not in second.output()
        assert len(_all_runs(api)) == RUNS
        rules = httpx.get(f"{api}/api/alerts", timeout=30).raise_for_status().json()["rules"]
        assert [(r["rule"]["name"], r["builtin"]) for r in rules] == [(RULE, False)]

        check = httpx.post(f"{api}/api/alerts/check", timeout=60).raise_for_status().json()
        assert check["errors"] == {}
        assert [s["rule"] for s in check["firing"]] == [RULE], check
        deadline = time.monotonic() + 20
        while not received and time.monotonic() < deadline:
            time.sleep(0.1)
        assert received and received[0]["steplens"]["rule"] == RULE and received[0]["steplens"]["kind"] == "firing"
        assert received[0]["steplens"]["evidence"], "the notification should point at example traces"
        second.interrupt_and_check_cleanup()
    finally:
        second.kill()


def test_a_taken_port_is_one_clear_line_and_nothing_starts(tmp_path, capsys) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        code = stack.main(["--port", str(taken), "--grpc-port", "0", "--ui-port", str(_free_port()),
                           "--data", str(tmp_path / "data")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"error: the HTTP port {taken} is already in use by another program; "
                           "choose another with `make run PORT=<free port>`")
    assert not (tmp_path / "data").exists()


def test_a_missing_config_file_is_reported_before_anything_starts(tmp_path, capsys) -> None:
    code = stack.main(["--port", str(_free_port()), "--grpc-port", "0", "--ui-port", str(_free_port()),
                       "--config", str(tmp_path / "nope.toml"), "--data", str(tmp_path / "data")])
    assert code == 2
    assert "config file" in capsys.readouterr().err and not (tmp_path / "data").exists()
