"""A small HTTP surface over a task queue, for services that take agent work over HTTP.

`task_router(queue)` is a FastAPI router to mount in the caller's own app (behind its own auth):
`POST /tasks` answers 202 with the task id as soon as the task is stored; `GET /tasks/{id}`,
`GET /tasks` and `POST /tasks/{id}/cancel` are `TaskQueue.status`, `list` and `cancel`.
`task_app(...)` is a whole app that also runs a `TaskRunner` while it serves. Errors are JSON:
422 bad input, 409 an idempotency key reused for other work, 404 an unknown task.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, HTTPException, Query
from pydantic import BaseModel, Field

from kernel.tasks.model import Task, TaskStatus
from kernel.tasks.queue import IdempotencyConflict, TaskQueue, UnknownTask
from kernel.tasks.store import TaskStore
from kernel.tasks.webhooks import WebhookPolicy


class SubmitBody(BaseModel):
    agent: str = Field(description="The agent reference (a name the runner knows, module:attribute, name@version).")
    input: str = Field(description="The task given to the agent.")
    webhook_url: str | None = None
    idempotency_key: str | None = Field(None, max_length=200)
    retryable: bool = False
    max_attempts: int = Field(3, ge=1, le=100)
    user_id: str | None = None
    conversation_id: str | None = None


class Submitted(BaseModel):
    task_id: str
    status: TaskStatus
    created: bool = Field(description="False: the idempotency key named a task submitted before.")


class TaskList(BaseModel):
    tasks: list[Task]


def task_router(queue: TaskQueue) -> APIRouter:
    router = APIRouter()

    @router.post("/tasks", status_code=202, response_model=Submitted)
    def submit(body: SubmitBody) -> Submitted:
        try:
            task, created = queue.submit_task(
                body.agent, body.input, webhook_url=body.webhook_url, idempotency_key=body.idempotency_key,
                retryable=body.retryable, max_attempts=body.max_attempts, user_id=body.user_id,
                conversation_id=body.conversation_id)
        except IdempotencyConflict as exc:
            raise HTTPException(409, str(exc)) from exc
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from exc
        return Submitted(task_id=task.task_id, status=task.status, created=created)

    @router.get("/tasks/{task_id}", response_model=Task)
    def status(task_id: str) -> Task:
        try:
            return queue.status(task_id)
        except UnknownTask as exc:
            raise HTTPException(404, str(exc)) from exc

    @router.get("/tasks", response_model=TaskList)
    def listing(status: TaskStatus | None = None, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> TaskList:
        return TaskList(tasks=queue.list(status, limit))

    @router.post("/tasks/{task_id}/cancel", response_model=Task)
    def cancel(task_id: str) -> Task:
        try:
            return queue.cancel(task_id, "cancelled over HTTP")
        except UnknownTask as exc:
            raise HTTPException(404, str(exc)) from exc

    return router


def task_app(store: TaskStore | str | Path, *, agents: Mapping[str, Any] | None = None, concurrency: int = 4,
             webhook: WebhookPolicy | None = None, poll_s: float = 0.5) -> FastAPI:
    """An app serving `task_router` and running the queue's tasks (a `TaskRunner`) while it serves."""
    from kernel.tasks.runner import TaskRunner

    queue = TaskQueue(store)
    runner = TaskRunner(queue, agents=agents, concurrency=concurrency, webhook=webhook, poll_s=poll_s)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        stop = asyncio.Event()
        serving = asyncio.create_task(runner.run(stop))
        try:
            yield
        finally:
            stop.set()
            await serving

    app = FastAPI(title="steplens tasks", lifespan=lifespan)
    app.include_router(task_router(queue))
    app.state.runner = runner
    return app
