"""A deadline for receiving a request's body: the ASGI middleware every HTTP route runs behind.

Why: uvicorn times out idle keep-alive connections, but not a request whose body trickles in. A
client sending one byte every 3 s held a connection, a decode slot and its in-flight bytes
forever. Once the headers have arrived, the whole body must arrive within `body_read_timeout_s`;
beyond it the request is answered 408 (OTLP routes in OTLP encoding, through the app's error
handler; any other route with a JSON error) and the connection is closed, because the rest of the
body may still be on its way. Each timeout is counted (`steplens_body_read_timeouts`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ingest.errors import BodyTimeout

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

_CLOSE = (b"connection", b"close")


class BodyReadTimeout:
    """Raise BodyTimeout from `receive` once the body is overdue; make sure the answer is 408."""

    def __init__(self, app: ASGIApp, timeout_s: float, on_timeout: Callable[[], None]) -> None:
        self.app = app
        self.timeout_s = timeout_s
        self.on_timeout = on_timeout

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.timeout_s <= 0:
            await self.app(scope, receive, send)
            return
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        state = {"complete": False, "timed_out": False, "rewrite": False}
        error = BodyTimeout(f"request body not received within {self.timeout_s:g} s (body_read_timeout_s)")

        async def timed_receive() -> Message:
            if state["timed_out"]:
                return {"type": "http.disconnect"}
            if state["complete"]:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                state["timed_out"] = True
                self.on_timeout()
                raise error from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                state["complete"] = True
            return message

        async def guarded_send(message: Message) -> None:
            if not state["timed_out"]:
                await send(message)
                return
            if message["type"] == "http.response.start":
                if message["status"] == error.mapping.http_status:  # the app's own answer (OTLP routes)
                    await send({**message, "headers": [*message.get("headers", []), _CLOSE]})
                    return
                state["rewrite"] = True  # e.g. a framework that turned the error into a 400
                body = _json_error(error)
                await send(
                    {
                        "type": "http.response.start",
                        "status": error.mapping.http_status,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            _CLOSE,
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body, "more_body": False})
                return
            if state["rewrite"]:
                return  # the replaced answer's body
            await send(message)

        await self.app(scope, timed_receive, guarded_send)


def _json_error(error: BodyTimeout) -> bytes:
    return json.dumps({"error": {"reason": error.reason, "message": error.message}}).encode()
