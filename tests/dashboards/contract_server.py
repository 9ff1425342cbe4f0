"""A real HTTP server (uvicorn, 127.0.0.1, port 0) answering the analytics endpoints exactly as
/work/notes' analytics contract words them, for pages whose server side is still being built.

It is not a mock of HTTP: the dashboards reach it over real sockets through their real client.
It lets the page tests pin what the pages draw from each documented field (links to examples,
cost parts, divergence) independently of the analytics queries' own tests.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI, Query
from fastapi.responses import PlainTextResponse

EX = ["a" * 32, "b" * 32, "c" * 32]


def _run(trace_id: str, agent: str = "calc", version: str = "1.0") -> dict[str, Any]:
    return {"trace_id": trace_id, "project": "default", "agent": agent, "version": version, "ok": True,
            "stop_reason": "finish", "steps": 2, "llm_calls": 2, "tool_calls": 1, "tool_errors": 0,
            "input_tokens": 100, "output_tokens": 20, "cost_usd": 0.01, "models": ["gpt-4o-mini"],
            "start_time": "2025-03-01T12:00:00Z", "duration_ms": 1500.0}


def build_app() -> FastAPI:
    app = FastAPI()

    @app.get("/api/failures")
    def failures(since: str | None = None) -> dict[str, Any]:
        return {"total_failed": 7, "clusters": [
            {"stop_reason": "tool_error_exhausted", "signature": "tool|flaky|exception|backend <n> for <q>",
             "span_kind": "tool", "tool": "flaky", "error_type": "exception",
             "message_template": "RuntimeError: backend <n> for <q>", "count": 5, "share": 5 / 7,
             "first_seen": "2025-03-01T10:00:00Z", "last_seen": "2025-03-01T12:00:00Z", "versions": ["1.0", "2.0"],
             "examples": EX, "trend": [{"bucket": "2025-03-01T10:00:00Z", "count": 2},
                                       {"bucket": "2025-03-01T11:00:00Z", "count": 3}]},
            {"stop_reason": "max_steps", "signature": "max_steps", "span_kind": None, "tool": None,
             "error_type": None, "message_template": None, "count": 2, "share": 2 / 7,
             "first_seen": "2025-03-01T11:00:00Z", "last_seen": "2025-03-01T11:30:00Z", "versions": ["1.0"],
             "examples": [EX[1]], "trend": []},
        ]}

    @app.get("/api/tools")
    def tools(since: str | None = None) -> dict[str, Any]:
        return {"tools": [
            {"tool": "search", "calls": 40, "errors": 4, "error_rate": 0.1, "errors_by_type": {"timeout": 3, "denied": 1},
             "timeouts": 3, "denials": 1, "p50_ms": 120.0, "p95_ms": 900.0, "truncation_rate": 0.25,
             "dropped_tokens": 5000, "cost": {"direct": 0.04, "decision": 0.12, "carry": 0.31, "total": 0.47},
             "examples": [EX[0], EX[2]]},
            {"tool": "add", "calls": 10, "errors": 0, "error_rate": 0.0, "errors_by_type": {}, "timeouts": 0,
             "denials": 0, "p50_ms": 1.0, "p95_ms": 2.0, "truncation_rate": 0.0, "dropped_tokens": 0,
             "cost": {"direct": 0.0, "decision": 0.01, "carry": 0.002, "total": 0.012}, "examples": [EX[1]]},
        ]}

    @app.get("/api/cost", response_model=None)
    def cost(group_by: str = "model", format: str = "json", since: str | None = None) -> Any:
        rows = [{"key": "gpt-4o", "runs": 3, "llm_calls": 9, "input_tokens": 3000, "output_tokens": 300,
                 "cost_usd": 0.75, "examples": [EX[0]]},
                {"key": None, "runs": 1, "llm_calls": 1, "input_tokens": 10, "output_tokens": 1, "cost_usd": 0.0,
                 "examples": []}]
        if format == "csv":
            return PlainTextResponse(f"{group_by},runs,cost_usd\ngpt-4o,3,0.75\n,1,0.0\n", media_type="text/csv")
        return {"group_by": group_by, "rows": rows, "total_cost_usd": 0.75, "price_table": {"as_of": "2025-02-01"}}

    @app.get("/api/diff")
    def diff(a: str = Query(), b: str = Query()) -> dict[str, Any]:
        step = {"action": "add", "arguments": {"a": 2, "b": 3}, "observation": "5"}
        other = {"action": "add", "arguments": {"a": 2, "b": 4}, "observation": "6"}
        return {"a": _run(a), "b": _run(b, version="2.0"),
                "first_divergence": {"step": 1, "field": "arguments", "a": {"a": 2, "b": 3}, "b": {"a": 2, "b": 4}},
                "steps": [{"index": 1, "a": step, "b": other, "same": False},
                          {"index": 2, "a": None, "b": {"action": "finish", "arguments": None, "observation": None},
                           "same": False}],
                "delta": {"steps": 1, "input_tokens": 50, "output_tokens": 5, "cost_usd": 0.002}}

    return app


@contextmanager
def contract_server() -> Iterator[str]:
    """Serve build_app() on a free loopback port; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("contract server did not start")
            threading.Event().wait(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
