"""A real OpenAI-compatible HTTP server for tests: the `openai` client and its instrumentations talk
to it over real HTTP on 127.0.0.1, so what they record is what they would record in production.

Why not mock the client: the instrumentations (official, OpenInference, OpenLLMetry) patch the
`openai` module and read real response objects, streams and HTTP errors. Only a real server makes
them produce real spans.

Usage::

    with FakeOpenAI() as fake:
        fake.enqueue(ToolCallsReply([ToolCallSpec("get_weather", {"city": "Paris"})]), TextReply("Sunny."))
        fake.always("gpt-4.1-mini", HttpErrorReply(500))           # this model always fails
        client = openai.OpenAI(base_url=fake.base_url, api_key="test")
        ...
        assert fake.requests[0]["model"] == "gpt-4o-mini"

or as a pytest fixture: ``from tests.support.fake_openai import fake_openai  # noqa: F401``.

Behaviour selection for each `POST /v1/chat/completions`: the request model's queue, else the
shared queue, else the model's `always` behaviour, else the default (a deterministic text reply).
Streaming (`"stream": true`) is served as SSE, with a final usage chunk when
`stream_options.include_usage` is set, like the real API.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = [
    "FakeOpenAI",
    "HttpErrorReply",
    "TextReply",
    "ToolCallSpec",
    "ToolCallsReply",
    "Usage",
    "fake_openai",
    "malformed_tool_call",
    "RawReply",
]

_CREATED = 1_700_000_000  # fixed, so responses are deterministic


@dataclass(frozen=True)
class Usage:
    """Token counts reported in the response (`cached_tokens` is part of `prompt_tokens`)."""

    prompt_tokens: int = 10
    completion_tokens: int = 5
    cached_tokens: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }


@dataclass(frozen=True)
class TextReply:
    """An assistant text message. `response_model` defaults to the requested model."""

    content: str = "This is a deterministic reply from the fake OpenAI server."
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    response_model: str | None = None
    delay_s: float = 0.0


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call. `arguments` as a dict is JSON-encoded; as a str it is sent verbatim (so it
    can be malformed on purpose)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class ToolCallsReply:
    """An assistant message with one or more tool calls (finish_reason `tool_calls`)."""

    calls: list[ToolCallSpec]
    usage: Usage = field(default_factory=Usage)
    content: str | None = None
    response_model: str | None = None
    delay_s: float = 0.0


@dataclass(frozen=True)
class HttpErrorReply:
    """An HTTP error with the OpenAI error body; `headers` e.g. {"retry-after": "1"} for 429."""

    status: int = 500
    message: str = "The server had an error while processing your request."
    type: str = "server_error"
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class RawReply:
    """Any status and body bytes, verbatim (broken JSON, HTML error pages from proxies, odd shapes)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    media_type: str = "application/json"
    delay_s: float = 0.0


Behaviour = TextReply | ToolCallsReply | HttpErrorReply | RawReply


def malformed_tool_call(name: str = "get_weather", raw_arguments: str = '{"city": "Par') -> ToolCallsReply:
    """A tool call whose arguments are not valid JSON, as real models sometimes emit."""
    return ToolCallsReply([ToolCallSpec(name, raw_arguments)])


class FakeOpenAI:
    """The server: a Starlette app run by uvicorn in a daemon thread on 127.0.0.1, port 0."""

    def __init__(self, default: Behaviour | None = None) -> None:
        self.default: Behaviour = default or TextReply()
        self.requests: list[dict[str, Any]] = []  # every request body, in arrival order
        self.request_headers: list[dict[str, str]] = []  # headers of each request, same order
        self._queue: deque[Behaviour] = deque()
        self._model_queues: dict[str, deque[Behaviour]] = {}
        self._always: dict[str, Behaviour] = {}
        self._lock = threading.Lock()
        self._counter = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # ---------------------------------------------------------------- programming
    def enqueue(self, *behaviours: Behaviour, model: str | None = None) -> FakeOpenAI:
        """Queue behaviours, used once each in order (for `model` only, when given)."""
        with self._lock:
            target = self._queue if model is None else self._model_queues.setdefault(model, deque())
            target.extend(behaviours)
        return self

    def always(self, model: str, behaviour: Behaviour) -> FakeOpenAI:
        """Answer every request for `model` with `behaviour` when nothing is queued for it."""
        with self._lock:
            self._always[model] = behaviour
        return self

    def reset(self) -> None:
        """Forget queued behaviours and recorded requests."""
        with self._lock:
            self._queue.clear()
            self._model_queues.clear()
            self._always.clear()
            self.requests.clear()
            self.request_headers.clear()

    def _next(self, model: str) -> tuple[Behaviour, int]:
        with self._lock:
            self._counter += 1
            queue = self._model_queues.get(model)
            if queue:
                return queue.popleft(), self._counter
            if self._queue:
                return self._queue.popleft(), self._counter
            return self._always.get(model, self.default), self._counter

    # ---------------------------------------------------------------- lifecycle
    @property
    def base_url(self) -> str:
        """What to pass as the OpenAI client's `base_url`."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=2
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="fake-openai", daemon=True
        )
        self._thread.start()
        for _ in range(500):
            if self._server.started:
                return self
            if not self._thread.is_alive():
                break
            threading.Event().wait(0.01)
        raise RuntimeError("fake OpenAI server did not start within 5 s")

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- HTTP handlers
    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": []})

    async def _chat(self, request: Request) -> Response:
        raw = await request.body()
        with self._lock:
            self.request_headers.append(dict(request.headers))
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            with self._lock:
                self.requests.append({"_invalid_body": raw.decode("utf-8", "replace")})
            return _error(HttpErrorReply(400, f"Invalid JSON body: {exc}", "invalid_request_error"))
        with self._lock:
            self.requests.append(body)
        model = str(body.get("model", ""))
        behaviour, n = self._next(model)
        if behaviour.delay_s:
            await asyncio.sleep(behaviour.delay_s)
        if isinstance(behaviour, RawReply):
            return Response(behaviour.body, status_code=behaviour.status, headers=behaviour.headers,
                            media_type=behaviour.media_type)
        if isinstance(behaviour, HttpErrorReply):
            return _error(behaviour)
        response_model = behaviour.response_model or model
        completion_id = f"chatcmpl-fake-{n}"
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(
                _sse(behaviour, completion_id, response_model, include_usage),
                media_type="text/event-stream",
            )
        return JSONResponse(_completion(behaviour, completion_id, response_model, n))


def _error(reply: HttpErrorReply) -> Response:
    body = {"error": {"message": reply.message, "type": reply.type, "param": None, "code": reply.code}}
    return JSONResponse(body, status_code=reply.status, headers=reply.headers)


def _tool_calls_json(reply: ToolCallsReply, n: int) -> list[dict[str, Any]]:
    out = []
    for i, call in enumerate(reply.calls):
        args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        out.append(
            {
                "id": call.id or f"call_fake_{n}_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": args},
            }
        )
    return out


def _completion(reply: TextReply | ToolCallsReply, cid: str, model: str, n: int) -> dict[str, Any]:
    if isinstance(reply, ToolCallsReply):
        message = {"role": "assistant", "content": reply.content, "tool_calls": _tool_calls_json(reply, n)}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": reply.content}
        finish = reply.finish_reason
    return {
        "id": cid,
        "object": "chat.completion",
        "created": _CREATED,
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": reply.usage.as_json(),
    }


async def _sse(
    reply: TextReply | ToolCallsReply, cid: str, model: str, include_usage: bool
) -> AsyncIterator[bytes]:
    def chunk(choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> bytes:
        payload = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": _CREATED,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": choices,
        }
        if include_usage:
            payload["usage"] = usage
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    def delta(d: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
        return [{"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}]

    yield chunk(delta({"role": "assistant", "content": ""}))
    if isinstance(reply, ToolCallsReply):
        n = int(cid.rsplit("-", 1)[-1])
        for i, call in enumerate(_tool_calls_json(reply, n)):
            head = {"index": i, "id": call["id"], "type": "function"}
            yield chunk(delta({"tool_calls": [{**head, "function": {"name": call["function"]["name"]}}]}))
            args = call["function"]["arguments"]
            for part in (args[: len(args) // 2], args[len(args) // 2 :]):
                yield chunk(delta({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
        finish = "tool_calls"
    else:
        words = reply.content.split(" ")
        for i, word in enumerate(words):
            yield chunk(delta({"content": word if i == 0 else " " + word}))
        finish = reply.finish_reason
    yield chunk(delta({}, finish))
    if include_usage:
        yield chunk([], reply.usage.as_json())
    yield b"data: [DONE]\n\n"


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started FakeOpenAI, stopped after the test."""
    with FakeOpenAI() as server:
        yield server
