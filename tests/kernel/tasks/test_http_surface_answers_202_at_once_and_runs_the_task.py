"""`task_app` served by a real uvicorn on 127.0.0.1:0: POST /tasks answers 202 with a task id while the
agent has not run yet, GET /tasks/{id} then shows it succeeded with the run's answer; bad input is
422, an idempotency key reused for other work 409, an unknown task 404, and a repeated submit with
the same key answers the same id."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from kernel.tasks.http import task_app
from tests.kernel.tasks import task_agents


@pytest.fixture
def served(tmp_path: Path, monkeypatch) -> Iterator[str]:
    monkeypatch.setenv("TASKS_SLOW_S", "0.5")
    app = task_app(tmp_path / "tasks.sqlite", agents={"slow": task_agents.slow}, poll_s=0.05)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(20)


def test_http_submit_poll_and_errors(served: str) -> None:
    with httpx.Client(base_url=served, timeout=10) as client:
        sent = client.post("/tasks", json={"agent": "slow", "input": "where is 1001?", "idempotency_key": "k"})
        assert sent.status_code == 202
        task_id = sent.json()["task_id"]
        assert sent.json()["created"] is True
        assert client.get(f"/tasks/{task_id}").json()["status"] in ("queued", "running")  # not run yet: the tool waits
        again = client.post("/tasks", json={"agent": "slow", "input": "where is 1001?", "idempotency_key": "k"})
        assert again.status_code == 202 and again.json() == {"task_id": task_id, "status": again.json()["status"],
                                                             "created": False}
        assert client.post("/tasks", json={"agent": "slow", "input": "other", "idempotency_key": "k"}).status_code == 409
        bad = client.post("/tasks", json={"agent": "slow", "input": "x", "webhook_url": "ftp://x"})
        assert bad.status_code == 422 and "http(s)" in bad.text
        assert client.get("/tasks/task_nope").status_code == 404
        assert client.post("/tasks/task_nope/cancel").status_code == 404

        deadline = time.monotonic() + 30
        while (task := client.get(f"/tasks/{task_id}").json())["status"] != "succeeded":
            assert time.monotonic() < deadline and task["status"] in ("queued", "running"), task
            time.sleep(0.05)
        assert task["result"]["answer"] == "it left the warehouse" and task["attempts"] == 1
        listed = client.get("/tasks", params={"status": "succeeded"}).json()["tasks"]
        assert [t["task_id"] for t in listed] == [task_id]
        assert client.get("/tasks", params={"status": "bogus"}).status_code == 422
