"""`steplens serve` as a real child process on 127.0.0.1: started on a free port, waited for until
/readyz answers 200, stopped with SIGTERM (the way an orchestrator stops it).

    with serving(["--db", str(db)]) as node:
        httpx.get(node.url + "/readyz")
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

SERVE = [sys.executable, "-m", "steplens.cli", "serve"]


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The test's environment without STEPLENS_*/OTEL_* settings leaking in from the outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPLENS_", "OTEL_"))}
    env.update(extra or {})
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Node:
    url: str
    proc: subprocess.Popen[str]


def run_serve(args: list[str], env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run `steplens serve ARGS` to completion (for configurations it must refuse)."""
    return subprocess.run([*SERVE, *args], capture_output=True, text=True, timeout=timeout, env=clean_env(env))


@contextmanager
def serving(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
            ready_timeout: float = 60) -> Iterator[Node]:
    """A `steplens serve` process (gRPC off unless ARGS pass --grpc-port) until the block ends."""
    port = free_port()
    argv = [*SERVE, "--port", str(port), *args]
    if "--grpc-port" not in args:
        argv += ["--grpc-port", "0"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env(env), cwd=cwd)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"steplens serve exited {proc.returncode}: {proc.communicate()[1][-4000:]}")
            try:
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("steplens serve did not become ready")
            time.sleep(0.1)
        yield Node(url, proc)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
