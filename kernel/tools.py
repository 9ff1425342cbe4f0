"""Tools the agent may call, and the registry that presents them to the model.

A tool's `parameters` is a JSON Schema because that is what every provider and our own
dispatcher (via `jsonschema`) understand; the `@tool` decorator derives it from pydantic so that
authors write ordinary typed async functions instead of schemas by hand.

Registration errors (bad schema, duplicate or malformed name) raise at definition time on
purpose: they are programming mistakes, caught once when the agent is built. Everything that
happens at call time is handled by `kernel.dispatch`, which never raises.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, get_type_hints, overload

from aiolimiter import AsyncLimiter
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from kernel.defaults import TOOL_TIMEOUT_S
from tracer.conventions import ACTION_FINISH, TOOL_TYPE_FUNCTION, RiskLevel

# OpenAI's rule for function names; the strictest provider rule, so names valid here work anywhere.
_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class ToolArgumentsError(ValueError):
    """Raised by handlers built with `@tool` when pydantic rejects the arguments.

    Dispatch reports it as `invalid_arguments` (the model's fault, fixable) rather than
    `exception` (the tool's fault)."""


@dataclass(frozen=True)
class ToolOrigin:
    """Where a tool's calls are answered when that is not this process (an MCP server): what its
    `execute_tool` span records about the server (design.md §2). None fields are left out."""

    mcp_server: str
    mcp_transport: str
    mcp_protocol_version: str | None = None
    server_address: str | None = None
    server_port: int | None = None


@dataclass
class Tool:
    """One callable tool. `handler` is awaited with the call's arguments as keyword arguments."""

    name: str
    description: str
    parameters: dict
    handler: Callable[..., Awaitable[Any]]
    timeout_s: float = TOOL_TIMEOUT_S
    side_effect: bool = False
    risk: RiskLevel = RiskLevel.LOW
    price_usd: float | None = None
    rate_limit_per_minute: float | None = None
    # Set for tools of another source (kernel.mcp); None for tools of this process.
    origin: ToolOrigin | None = None
    # Built lazily; the validator is compiled once per tool rather than once per call.
    _validator: Validator | None = field(default=None, init=False, repr=False, compare=False)
    # aiolimiter binds a limiter to one event loop, so keep one per loop (tests and repeated
    # asyncio.run() calls each have their own loop).
    _limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncLimiter] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self.risk = RiskLevel(self.risk)

    @property
    def validator(self) -> Validator:
        """A jsonschema validator for `parameters`, of the draft the schema declares (default 2020-12)."""
        if self._validator is None:
            cls = validator_for(self.parameters)
            cls.check_schema(self.parameters)
            self._validator = cls(self.parameters)
        return self._validator

    async def try_acquire_rate(self) -> bool:
        """Take one call from the rate budget without waiting; False when the budget is spent.

        A leaky bucket (aiolimiter): up to N calls in a burst, refilled at N per minute. Rates
        below one per minute become one call per 60/N seconds. Must run inside an event loop.
        """
        rate = self.rate_limit_per_minute
        if rate is None:
            return True
        if rate <= 0:
            return False
        loop = asyncio.get_running_loop()
        limiter = self._limiters.get(loop)
        if limiter is None:
            limiter = AsyncLimiter(rate, 60.0) if rate >= 1 else AsyncLimiter(1, 60.0 / rate)
            self._limiters[loop] = limiter
        if not limiter.has_capacity():
            return False
        # Capacity was just checked and nothing ran in between, so acquire() returns at once
        # instead of waiting (we answer rate_limited rather than stall the agent).
        await limiter.acquire()
        return True

    def openai_definition(self) -> dict:
        return {
            "type": TOOL_TYPE_FUNCTION,
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


# --------------------------------------------------------------------------------------------
# @tool decorator
# --------------------------------------------------------------------------------------------


_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SUBSCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else")


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's auto-generated titles ("Q" for field q): they tell the model nothing and
    cost tokens on every prompt. Walks schema keywords only, so a property named `title` stays."""
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _strip_titles(sub) for name, sub in out[key].items()}
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_strip_titles(sub) for sub in out[key]]
    for key in _SUBSCHEMA_ONE:
        if key in out:
            out[key] = _strip_titles(out[key])
    return out


def _clean_schema(schema: dict) -> dict:
    schema = _strip_titles(schema)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _model_arg(fn: Callable[..., Any]) -> tuple[str, type[BaseModel]] | None:
    """The (name, model) of a function whose single parameter is a pydantic model, else None."""
    params = list(inspect.signature(fn).parameters.values())
    if len(params) != 1:
        return None
    hints = get_type_hints(fn)
    ann = hints.get(params[0].name)
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return params[0].name, ann
    return None


def _signature_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    """A pydantic model mirroring the function's keyword parameters (type hints and defaults)."""
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        ann = hints.get(p.name, Any)
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (ann, default)
    # extra="forbid" puts additionalProperties:false in the schema, so a misspelt argument is
    # reported to the model instead of being silently dropped.
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def _build_tool(
    fn: Callable[..., Awaitable[Any]],
    name: str | None,
    description: str | None,
    **options: Any,
) -> Tool:
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"@tool needs an async function; {fn!r} is not one")
    try:
        get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise TypeError(
            f"@tool could not resolve the type hints of {fn.__qualname__} ({exc}); "
            "define argument types at module level"
        ) from exc
    tool_name = name or fn.__name__
    desc = description if description is not None else inspect.cleandoc(fn.__doc__ or "").strip()
    model_arg = _model_arg(fn)
    if model_arg is not None:
        arg_name, model = model_arg

        async def handler(**kwargs: Any) -> Any:
            try:
                value = model.model_validate(kwargs)
            except ValidationError as exc:
                raise ToolArgumentsError(str(exc)) from exc
            return await fn(**{arg_name: value})

    else:
        model = _signature_model(fn, tool_name)

        async def handler(**kwargs: Any) -> Any:
            try:
                value = model.model_validate(kwargs)
            except ValidationError as exc:
                raise ToolArgumentsError(str(exc)) from exc
            return await fn(**{k: getattr(value, k) for k in type(value).model_fields})

    handler.__name__ = f"{tool_name}_handler"
    handler.__doc__ = fn.__doc__
    return Tool(
        name=tool_name,
        description=desc,
        parameters=_clean_schema(model.model_json_schema()),
        handler=handler,
        **options,
    )


@overload
def tool(name: Callable[..., Awaitable[Any]]) -> Tool: ...
@overload
def tool(
    name: str | None = None,
    *,
    description: str | None = None,
    timeout_s: float = TOOL_TIMEOUT_S,
    side_effect: bool = False,
    risk: RiskLevel = RiskLevel.LOW,
    price_usd: float | None = None,
    rate_limit_per_minute: float | None = None,
) -> Callable[[Callable[..., Awaitable[Any]]], Tool]: ...


def tool(
    name: str | Callable[..., Awaitable[Any]] | None = None,
    *,
    description: str | None = None,
    timeout_s: float = TOOL_TIMEOUT_S,
    side_effect: bool = False,
    risk: RiskLevel = RiskLevel.LOW,
    price_usd: float | None = None,
    rate_limit_per_minute: float | None = None,
) -> Tool | Callable[[Callable[..., Awaitable[Any]]], Tool]:
    """Turn an async function into a `Tool`. Usable bare (`@tool`) or with options (`@tool(...)`).

    The arguments schema comes from pydantic: either the function's single pydantic-model
    parameter, or a model built from its parameters' type hints and defaults (use
    `Annotated[T, Field(description=...)]` to describe a parameter). The description defaults to
    the docstring. The resulting handler validates with pydantic again, so the function receives
    typed values (models, enums, dates) and not raw JSON.
    """
    options = dict(
        timeout_s=timeout_s,
        side_effect=side_effect,
        risk=risk,
        price_usd=price_usd,
        rate_limit_per_minute=rate_limit_per_minute,
    )
    if callable(name):
        return _build_tool(name, None, description, **options)

    def decorate(fn: Callable[..., Awaitable[Any]]) -> Tool:
        return _build_tool(fn, name, description, **options)

    return decorate


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------


class ToolRegistry:
    """The tool set of one agent, in registration order (the order the model sees)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.register(t)

    def register(self, tool: Tool) -> Tool:
        """Add a tool. Raises ValueError for a bad or duplicate name or an invalid schema, because
        those are mistakes in the agent's code, better found at start-up than mid-run."""
        if not isinstance(tool, Tool):
            raise TypeError(f"expected a Tool, got {type(tool).__name__}")
        if not _NAME_RE.match(tool.name):
            raise ValueError(f"tool name {tool.name!r} must match {_NAME_RE.pattern}")
        if tool.name == ACTION_FINISH:
            raise ValueError(f"{ACTION_FINISH!r} is reserved for the final answer")
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        if not isinstance(tool.parameters, dict):
            raise ValueError(f"tool {tool.name!r}: parameters must be a JSON Schema object")
        try:
            tool.validator  # noqa: B018 - compiles and checks the schema now
        except Exception as exc:
            raise ValueError(f"tool {tool.name!r}: invalid JSON Schema: {exc}") from exc
        if tool.timeout_s <= 0:
            raise ValueError(f"tool {tool.name!r}: timeout_s must be positive")
        self._tools[tool.name] = tool
        return tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name) if isinstance(name, str) else None

    def names(self) -> list[str]:
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def as_prompt_text(self) -> str:
        """The tool set as text for a prompt-based (ReAct) agent: name, description, flags that
        change what a call does, and the arguments schema as compact JSON."""
        if not self._tools:
            return "(no tools available)"
        blocks = []
        for t in self._tools.values():
            flags = []
            if t.side_effect:
                flags.append("has side effects")
            if t.risk != RiskLevel.LOW:
                flags.append(f"risk: {t.risk.value}")
            if t.price_usd:
                flags.append(f"costs ${t.price_usd:g} per call")
            if t.rate_limit_per_minute is not None:
                flags.append(f"max {t.rate_limit_per_minute:g} calls/minute")
            head = f"- {t.name}: {t.description or '(no description)'}"
            if flags:
                head += f" [{'; '.join(flags)}]"
            schema = json.dumps(t.parameters, ensure_ascii=False, separators=(",", ":"))
            blocks.append(f"{head}\n  arguments (JSON Schema): {schema}")
        return "\n".join(blocks)

    def as_openai_tools(self) -> list[dict]:
        """OpenAI-style `tools` definitions (also accepted by most other providers' adapters)."""
        return [t.openai_definition() for t in self._tools.values()]
