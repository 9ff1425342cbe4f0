"""`make run`: start the whole stack on this machine, feed it demo runs, print the URLs.

Why a Python orchestrator instead of shell in the Makefile: it must check ports before starting
(another program may own 4318/8501), wait for readiness, and on Ctrl-C stop every process it
started, which is fiddly and fragile in make.

Why each child runs in its own session (process group): a terminal's Ctrl-C reaches the whole
foreground group at once, so the server, the demo and Streamlit would all be interrupted in no
particular order (and uvicorn treats a second SIGINT as "exit now, skip the flush"). Here only the
orchestrator gets the terminal's signals and stops the children itself: the UI first, the server
last, each with one SIGINT and a bounded wait, then SIGKILL.

Re-running reuses the data: the DuckDB file under `--data` is kept, and with `--demo auto` (the
default) the demo workload runs only when the store holds no runs yet. The demo writes a history
(`--days`, default 14: runs spread over the last two weeks with planted events for the
dashboards and the built-in alert rules to find); the dashboards start while it runs, so the
first page with data is up as soon as the demo is done.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import httpx

STOP_WAIT_S = 15.0
SERVER_READY_S = 120.0  # a restart replays the write-ahead spool before it is ready
UI_READY_S = 60.0
# Without a steplens.toml, the stack's server scores the demo's live runs with two deterministic
# evaluator rules, so the Evaluators page (and the runs' scores) have data on `make run`; a config
# file, or STEPLENS_EVALUATORS in the environment, decides instead.
DEMO_EVALUATORS = [
    {"name": "no-tool-error", "delay": "10s", "evaluator": {"kind": "no_tool_error"},
     "score": {"name": "no_tool_error", "type": "boolean"}},
    {"name": "within-8-steps", "delay": "10s", "evaluator": {"kind": "max_steps", "limit": 8},
     "score": {"name": "within_8_steps", "type": "boolean"}},
]
DEMO_MODES = ("auto", "always", "never")
DEMO_RUNS = 1000  # 14 days of about 70 runs: enough for every planted event to be found, quick to send
DEMO_DAYS = 14.0
API_KEY_ENV = "STEPLENS_API_KEY"


class Interrupted(Exception):
    """Raised by the SIGINT/SIGTERM/SIGHUP handler so every wait unwinds into the same cleanup."""


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def taken_ports(ports: list[tuple[str, int, str]], host: str = "127.0.0.1") -> list[str]:
    """One message per port in use, naming the `make run` variable that moves it."""
    return [
        f"error: the {label} port {port} is already in use by another program; "
        f"choose another with `make run {flag}=<free port>`"
        for label, port, flag in ports
        if port and not port_is_free(host, port)
    ]


def _auth_headers() -> dict[str, str]:
    key = os.environ.get(API_KEY_ENV, "").strip()
    return {"Authorization": f"Bearer {key}"} if key else {}


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """True once `url` answers 200; False when `proc` dies first or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return False


def stored_runs(api: str) -> int | None:
    """0 when the store is empty, 1 when it holds at least one run, None when the API cannot tell
    (then the demo runs: a missing demo is worse than a second batch)."""
    try:
        params = {"limit": 1, "mode": "all"}  # eval or shadow runs alone make a store that is not empty
        response = httpx.get(f"{api}/api/runs", params=params, headers=_auth_headers(), timeout=10.0)
        return 1 if response.raise_for_status().json().get("runs") else 0
    except (httpx.HTTPError, ValueError, AttributeError):
        return None


def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


@dataclass
class Children:
    """The processes this orchestrator started, in start order, so they can be stopped in reverse."""

    procs: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append((name, proc))
        return proc

    def first_exited(self) -> tuple[str, int] | None:
        for name, proc in self.procs:
            code = proc.poll()
            if code is not None:
                return name, code
        return None

    def stop_all(self) -> None:
        for _, proc in reversed(self.procs):
            _stop(proc)


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)  # the child leads its own group: reach anything it spawned too


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        _signal_group(proc, signal.SIGINT)
        try:
            proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            print(f"warning: process {proc.pid} ignored SIGINT for {STOP_WAIT_S:g} s; killing it", file=sys.stderr)
    _signal_group(proc, signal.SIGKILL)  # stragglers of the group, if any, even after a clean exit
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """Ctrl-C, `kill` and a closed terminal all stop the stack the same way."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(signal.Signals(signum).name)

    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, handler) for s in sigs}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m steplens.stack", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=4318, help="OTLP/HTTP and query API port")
    parser.add_argument("--grpc-port", type=int, default=4317, help="OTLP/gRPC port (0 disables)")
    parser.add_argument("--ui-port", type=int, default=8501, help="dashboards port")
    parser.add_argument("--runs", type=int, default=DEMO_RUNS, help="demo runs when the demo runs")
    parser.add_argument("--days", type=float, default=DEMO_DAYS,
                        help="days of history the demo runs are spread over (0: all now)")
    parser.add_argument("--seed", type=int, default=0, help="demo seed (same seed, same runs)")
    parser.add_argument("--demo", choices=DEMO_MODES, default="auto",
                        help="auto: only into an empty store; always: add a batch; never")
    parser.add_argument("--data", type=Path, default=Path("data"), help="directory of steplens.duckdb")
    parser.add_argument("--config", type=Path, default=None, help="steplens.toml (alert rules, keys, ...)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    problems = taken_ports([("HTTP", args.port, "PORT"), ("gRPC", args.grpc_port, "GRPC_PORT"),
                            ("dashboard", args.ui_port, "UI_PORT")])
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if args.config is not None and not args.config.is_file():
        print(f"error: config file {args.config} not found", file=sys.stderr)
        return 2

    args.data.mkdir(parents=True, exist_ok=True)
    with interrupts():
        children = Children()
        try:
            return _run(args, children)
        except Interrupted:
            print("\nstopping", flush=True)
            return 0
        finally:
            with _ignoring_interrupts():
                children.stop_all()


@contextlib.contextmanager
def _ignoring_interrupts() -> Iterator[None]:
    """A second Ctrl-C while stopping must not leave children behind."""
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _run(args: argparse.Namespace, children: Children) -> int:
    api = f"http://127.0.0.1:{args.port}"
    exe = [sys.executable, "-m", "steplens.cli"]
    serve = [*exe, "serve", "--port", str(args.port), "--grpc-port", str(args.grpc_port),
             "--db", str(args.data / "steplens.duckdb")]
    if args.config is not None:
        serve += ["--config", str(args.config)]
    env = None
    if args.config is None and "STEPLENS_EVALUATORS" not in os.environ:
        env = {**os.environ, "STEPLENS_EVALUATORS": json.dumps(DEMO_EVALUATORS)}
    server = children.start("ingest server", serve, env=env)
    if not wait_ready(f"{api}/readyz", server, SERVER_READY_S):
        print("error: the ingest server did not become ready; see its output above", file=sys.stderr)
        return 1
    print(f"ingest server:  {api}  (OTLP/HTTP {api}/v1/traces, query API {api}/api/runs)", flush=True)
    if args.grpc_port:
        print(f"OTLP/gRPC:      127.0.0.1:{args.grpc_port}", flush=True)

    ui = None
    if has_module("dashboards.app"):  # started first: Streamlit boots while the demo runs
        ui = children.start("dashboards", [*exe, "ui", "--api", api, "--port", str(args.ui_port)])

    _maybe_demo(args, api, exe, children)

    ui_url = None
    if ui is not None:
        if wait_ready(f"http://127.0.0.1:{args.ui_port}/_stcore/health", ui, UI_READY_S):
            ui_url = f"http://127.0.0.1:{args.ui_port}"
        else:
            print("error: the dashboards did not start; see their output above", file=sys.stderr)
            return 1
    else:
        print("dashboards: not available in this installation", file=sys.stderr)

    print("\nsteplens is running:", flush=True)
    print(f"  dashboards:   {ui_url or '(not available)'}")
    print(f"  query API:    {api}/api/runs")
    print(f"  send OTLP to: {api}/v1/traces" + (f"  or gRPC 127.0.0.1:{args.grpc_port}" if args.grpc_port else ""))
    print(f"  data:         {args.data / 'steplens.duckdb'} (kept between runs)")
    print("press Ctrl-C to stop everything", flush=True)
    while (exited := children.first_exited()) is None:
        time.sleep(0.5)
    name, code = exited
    print(f"error: the {name} exited (code {code}); stopping the rest", file=sys.stderr)
    return 1


def _maybe_demo(args: argparse.Namespace, api: str, exe: list[str], children: Children) -> None:
    if args.demo == "never" or args.runs <= 0:
        return
    if not has_module("kernel.examples"):
        print("demo workload: not available in this installation", file=sys.stderr)
        return
    if args.demo == "auto" and stored_runs(api):
        print("demo workload: skipped, the store already holds runs (reusing the data; "
              "`make run DEMO=always` adds another batch)", flush=True)
        return
    demo = children.start("demo", [*exe, "demo", "--endpoint", api, "--runs", str(args.runs),
                                   "--days", str(args.days), "--seed", str(args.seed)])
    code = demo.wait()
    children.procs.remove(("demo", demo))
    if code != 0:
        print(f"warning: the demo workload exited with code {code}; the server keeps running", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
