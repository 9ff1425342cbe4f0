"""MCP servers as a tool source: their tools become ordinary `Tool`s in a `ToolRegistry`.

Why ordinary tools: a call to an MCP tool then goes through the same dispatch boundary as any
other (argument validation against the server's JSON Schema, side-effect policy, rate limit,
timeout, errors as observations) and gets the same `execute_tool` span, which additionally says
which server answered (design.md §2). The agent loop does not know MCP exists.

Why a connection task: the SDK's `Client` is an anyio context whose task group must be entered
and left in one task, and whose transport tasks may fail when a server dies. Holding it in a
task of its own keeps those failures away from the agent's task: a server that exits, crashes or
closes its stream only makes the next calls fail fast (`exception`, "connection closed"), and a
server that hangs is cut by the tool's timeout (`timeout`). A run never gets stuck on either.

A connection belongs to the event loop that opened it: open it with `async with` around
`await agent.run(...)` (not `run_sync`, which starts a loop of its own per run).

Tool flags come from the server's annotations, read the way the MCP spec defines their
defaults: a tool is read-only only when it says so (`readOnlyHint`), so an unannotated tool has
side effects and is gated by the agent's policy; its risk is high unless it says it is not
destructive (`destructiveHint: false`, then medium). Hints are the server's claims, so
`overrides` lets the agent's author set any flag per tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as MCPTool

from kernel.defaults import TOOL_TIMEOUT_S
from kernel.tools import Tool, ToolOrigin, ToolRegistry
from tracer.conventions import McpTransport, RiskLevel

log = logging.getLogger(__name__)

TRANSPORT_STDIO = McpTransport.STDIO
TRANSPORT_HTTP = McpTransport.STREAMABLE_HTTP

_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_NAME = 64
_MAX_PAGES = 100  # a server whose tool list never ends must not hang start-up


class MCPConnectionError(RuntimeError):
    """The server could not be started, reached or listed within `connect_timeout_s`. Raised at
    start-up (like a bad tool registration): an agent without its tools should not start."""


class MCPServerGone(RuntimeError):
    """Raised inside a tool handler when its server's connection is closed; dispatch reports it
    as an `exception` observation naming the server."""


@dataclass(frozen=True)
class MCPToolOptions:
    """Per-tool overrides of what the server's annotations say (None keeps the derived value)."""

    side_effect: bool | None = None
    risk: RiskLevel | None = None
    timeout_s: float | None = None
    price_usd: float | None = None
    rate_limit_per_minute: float | None = None


@dataclass
class MCPToolSource:
    """One MCP server's tools. Use as `async with MCPToolSource.stdio(...) as source:`; inside,
    `source.tools` are the server's tools and `source.registry()` a registry of them.

    name: how spans and error messages name the server (`steplens.tool.mcp.server`); defaults to
    the name the server reports. prefix: put before every tool name, to keep two servers' tools
    apart. timeout_s: each call's timeout (dispatch enforces it; the SDK also sends the server a
    cancellation). connect_timeout_s: bound on start-up (spawn/connect, handshake, listing).
    """

    target: StdioServerParameters | str
    transport: McpTransport
    name: str | None = None
    prefix: str = ""
    timeout_s: float = TOOL_TIMEOUT_S
    connect_timeout_s: float = 15.0
    overrides: Mapping[str, MCPToolOptions] = field(default_factory=dict)
    tools: list[Tool] = field(default_factory=list, init=False)
    protocol_version: str | None = field(default=None, init=False)
    _client: Client | None = field(default=None, init=False, repr=False)
    _task: asyncio.Task | None = field(default=None, init=False, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False, repr=False)
    _ready: asyncio.Event | None = field(default=None, init=False, repr=False)
    _stop: asyncio.Event | None = field(default=None, init=False, repr=False)
    _closed: asyncio.Event | None = field(default=None, init=False, repr=False)
    _failure: BaseException | None = field(default=None, init=False, repr=False)

    # ---- construction -------------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        **options: Any,
    ) -> MCPToolSource:
        """A server run as a subprocess, spoken to over its stdin/stdout."""
        params = StdioServerParameters(command=command, args=list(args), env=dict(env) if env else None, cwd=cwd)
        return cls(params, TRANSPORT_STDIO, **options)

    @classmethod
    def http(cls, url: str, **options: Any) -> MCPToolSource:
        """A server reached over streamable HTTP at `url` (e.g. `http://127.0.0.1:8000/mcp`)."""
        return cls(url, TRANSPORT_HTTP, **options)

    # ---- lifetime -----------------------------------------------------------------------------

    async def __aenter__(self) -> MCPToolSource:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Connect, list the tools and build them. Raises MCPConnectionError on failure."""
        if self._task is not None:
            raise RuntimeError("this MCPToolSource is already open")
        self._loop = asyncio.get_running_loop()
        self._ready, self._stop, self._closed = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self._task = asyncio.create_task(self._hold(), name=f"mcp connection {self.describe_target()}")
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                await self._ready.wait()
                if self._client is None:
                    raise MCPConnectionError(self._failure_text("could not connect"))
                listed = await self._list_tools(self._client)
        except TimeoutError:
            await self.close()
            raise MCPConnectionError(
                f"MCP server {self.describe_target()} did not connect and list its tools within "
                f"{self.connect_timeout_s:g} s"
            ) from None
        except MCPConnectionError:
            await self.close()
            raise
        except Exception as exc:
            await self.close()
            raise MCPConnectionError(f"MCP server {self.describe_target()}: {type(exc).__name__}: {exc}") from exc
        if self.name is None:
            info = self._client.server_info
            self.name = info.name if info is not None and info.name else self.describe_target()
        self.protocol_version = self._client.protocol_version
        self.tools = [self._build(t) for t in listed]

    async def close(self) -> None:
        """Close the connection (a stdio server is stopped). Never raises; safe to call twice."""
        if self._task is None or self._stop is None:
            return
        self._stop.set()
        if self._client is None:
            self._task.cancel()  # still connecting: nothing to close politely
        with contextlib.suppress(BaseException):
            # The SDK's own shutdown is bounded (a stdio server gets a few seconds, then a kill).
            await asyncio.wait_for(asyncio.shield(self._task), timeout=10.0)
        if not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait({self._task}, timeout=2.0)
        self._client = None

    async def _hold(self) -> None:
        """The connection task: enter the client, wait for close(), leave it. Any failure of the
        transport ends up here (recorded), never in the agent's task."""
        assert self._ready is not None and self._stop is not None and self._closed is not None
        try:
            async with Client(self.target, cache=None) as client:
                self._client = client
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - recorded and reported by the next call
            self._failure = exc
            if not isinstance(exc, Exception | asyncio.CancelledError):
                raise
        finally:
            self._closed.set()
            self._ready.set()

    async def _list_tools(self, client: Client) -> list[MCPTool]:
        tools: list[MCPTool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    # ---- tools --------------------------------------------------------------------------------

    def registry(self) -> ToolRegistry:
        """A registry of this server's tools (to combine servers, register `tools` into one)."""
        return ToolRegistry(self.tools)

    def describe_target(self) -> str:
        """The server for messages: its name once known, else its command or URL."""
        if self.name:
            return repr(self.name)
        if isinstance(self.target, str):
            return self.target
        return " ".join([self.target.command, *self.target.args])

    def origin(self) -> ToolOrigin:
        """What the tool spans record about the server (design.md §2)."""
        address = port = None
        if isinstance(self.target, str):
            parts = urlsplit(self.target)
            address, port = parts.hostname, parts.port
        return ToolOrigin(
            mcp_server=self.name or self.describe_target(),
            mcp_transport=McpTransport(self.transport).value,
            mcp_protocol_version=self.protocol_version,
            server_address=address,
            server_port=port,
        )

    def _build(self, spec: MCPTool) -> Tool:
        options = self.overrides.get(spec.name) or MCPToolOptions()
        hints = spec.annotations
        read_only = bool(hints is not None and hints.read_only_hint)
        destructive = hints.destructive_hint if hints is not None else None
        side_effect = options.side_effect if options.side_effect is not None else not read_only
        if options.risk is not None:
            risk = RiskLevel(options.risk)
        elif not side_effect:
            risk = RiskLevel.LOW
        else:
            risk = RiskLevel.MEDIUM if destructive is False else RiskLevel.HIGH
        schema = dict(spec.input_schema or {})
        schema.setdefault("type", "object")
        timeout = options.timeout_s if options.timeout_s is not None else self.timeout_s
        return Tool(
            name=_tool_name(self.prefix, spec.name),
            description=spec.description or spec.title or "",
            parameters=schema,
            handler=self._handler(spec.name, timeout),
            timeout_s=timeout,
            side_effect=side_effect,
            risk=risk,
            price_usd=options.price_usd,
            rate_limit_per_minute=options.rate_limit_per_minute,
            origin=self.origin(),
        )

    def _handler(self, remote_name: str, timeout_s: float):  # noqa: ANN202 - a Tool handler
        async def call(**arguments: Any) -> str:
            return await self.call(remote_name, arguments, timeout_s)

        call.__name__ = f"mcp_{_INVALID_NAME_CHARS.sub('_', remote_name)}"
        return call

    async def call(self, remote_name: str, arguments: dict[str, Any], timeout_s: float | None = None) -> str:
        """Call a tool on the server and render its result as the model's observation text.
        Raises (for dispatch to report) when the server is gone, answers with an error result,
        or the call is made from another event loop than the one that opened the connection."""
        client = self._client
        if client is None or self._closed is None or self._closed.is_set():
            raise MCPServerGone(self._failure_text("the connection is closed"))
        if asyncio.get_running_loop() is not self._loop:
            raise RuntimeError(
                f"MCP server {self.describe_target()} was opened in another event loop; call its "
                "tools from the loop that opened it (await agent.run inside `async with`)"
            )
        work = asyncio.ensure_future(client.call_tool(remote_name, arguments, read_timeout_seconds=timeout_s))
        gone = asyncio.ensure_future(self._closed.wait())
        try:
            done, _ = await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for f in (work, gone):
                if not f.done():
                    f.cancel()
        if work not in done:
            raise MCPServerGone(self._failure_text("the connection closed during the call"))
        try:
            result = work.result()
        except Exception as exc:  # the SDK's MCPError "Connection closed", a protocol error, ...
            raise MCPServerGone(f"MCP server {self.describe_target()}: {type(exc).__name__}: {exc}") from exc
        text = render_result(result)
        if result.is_error:
            raise MCPToolError(text or "the tool reported an error without a message")
        return text

    def _failure_text(self, what: str) -> str:
        cause = self._failure
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        return f"MCP server {self.describe_target()} ({self.transport}): {what}{detail}"


class MCPToolError(RuntimeError):
    """The server ran the tool and it failed (`isError` result): the server's text is the message."""


def render_result(result: CallToolResult) -> str:
    """What the model reads: the structured result as JSON when there is one, else the text
    blocks joined; other blocks (images, audio, resources) are named, not inlined."""
    if result.structured_content is not None and not result.is_error:
        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        else:
            kind = getattr(block, "type", type(block).__name__)
            mime = getattr(block, "mime_type", None)
            parts.append(f"[{kind} content{f' ({mime})' if mime else ''} not shown]")
    return "\n".join(parts)


def _tool_name(prefix: str, remote: str) -> str:
    """A name every provider accepts (`^[a-zA-Z0-9_-]{1,64}$`); MCP allows a wider set (dots,
    128 chars), so other characters become `_` and long names are cut. The call still uses the
    server's own name."""
    name = _INVALID_NAME_CHARS.sub("_", f"{prefix}{remote}")[:_MAX_NAME]
    return name or "mcp_tool"


__all__ = [
    "MCPConnectionError",
    "MCPServerGone",
    "MCPToolError",
    "MCPToolOptions",
    "MCPToolSource",
    "TRANSPORT_HTTP",
    "TRANSPORT_STDIO",
    "render_result",
]
