"""Tool dispatch: the safety boundary between what the model asked for and what runs.

`dispatch` never raises (only `asyncio.CancelledError` propagates, so cancelling a run still
works). Every failure becomes an error observation the model can read and act on:
`ERROR_PREFIX` followed by JSON `{"error": CODE, "message": ...}`, CODE one of ToolErrorCode.
A fixed prefix plus JSON makes errors unmistakable both to the model and to code that reads
stored runs (`parse_error_observation`), whatever a tool's normal output looks like.

Order of checks: unknown tool, argument schema, side-effect policy, rate limit, then the call
under its timeout. Validation comes before the policy so a human confirming a call sees valid
arguments; the rate limit comes after so denied or shadowed calls do not spend it.

`Observation.decision` is the policy's verdict (EXECUTED for tools without side effects), also
on calls rejected before the policy (unknown tool, bad arguments): `error.error` says what
happened. `cost_usd` is the tool's price whenever its handler was invoked, including when it
then failed or timed out (a paid API has usually billed the call by then).
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import json
import time
from typing import Any

from jsonschema.exceptions import ValidationError as SchemaError
from jsonschema.exceptions import relevance
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import to_jsonable_python

from kernel.policy import AllowAll, PolicyDecision, SideEffectPolicy, active_shadow
from kernel.tools import Tool, ToolArgumentsError, ToolRegistry
from kernel.types import Observation, ToolCall, ToolError
from tracer.conventions import ToolDecision, ToolErrorCode

ERROR_PREFIX = "TOOL_ERROR "
NOT_EXECUTED_PREFIX = "NOT_EXECUTED "
_MAX_SCHEMA_ERRORS = 5
_RAW_KEY = "_raw"


def error_observation_text(code: ToolErrorCode, message: str) -> str:
    """The text the model sees for a failed call."""
    body = {"error": ToolErrorCode(code).value, "message": str(message)}
    return ERROR_PREFIX + json.dumps(body, ensure_ascii=False)


def parse_error_observation(text: str) -> ToolError | None:
    """The ToolError inside an error observation, or None if `text` is not one. Never raises."""
    if not isinstance(text, str) or not text.startswith(ERROR_PREFIX):
        return None
    try:
        return ToolError.model_validate_json(text[len(ERROR_PREFIX) :])
    except (PydanticValidationError, ValueError):
        return None


def render_result(result: Any) -> str:
    """Strings as they are; anything else as JSON (pydantic models, dataclasses, dates included)."""
    if isinstance(result, str):
        return result
    try:
        return json.dumps(to_jsonable_python(result, fallback=repr), ensure_ascii=False)
    except Exception:  # a pathological object (e.g. a cyclic structure) still gets shown
        return repr(result)


# --------------------------------------------------------------------------------------------
# Error observations
# --------------------------------------------------------------------------------------------


def _error(
    call: ToolCall,
    code: ToolErrorCode,
    message: str,
    started: float,
    decision: ToolDecision = ToolDecision.EXECUTED,
    cost_usd: float = 0.0,
) -> Observation:
    return Observation(
        tool_call_id=call.id,
        tool_name=call.name,
        content=error_observation_text(code, message),
        is_error=True,
        error=ToolError(error=code, message=message),
        decision=decision,
        duration_s=time.monotonic() - started,
        cost_usd=cost_usd,
    )


def _unknown_tool_message(name: str, registry: ToolRegistry) -> str:
    available = registry.names()
    msg = f"unknown tool {name!r}. Available tools: {', '.join(available) if available else '(none)'}"
    close = difflib.get_close_matches(str(name), available, n=1)
    if close:
        msg += f". Did you mean {close[0]!r}?"
    return msg


def _path(err: SchemaError) -> str:
    """The failing field as `a.b[0].c` (empty for the arguments object itself)."""
    out = ""
    for part in err.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe(err: SchemaError, arguments: dict[str, Any]) -> str:
    """One schema violation, saying which field and what the schema wants."""
    where = _path(err)
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = [f for f in err.validator_value if f not in err.instance]
        field = f"{where}.{missing[0]}" if where and missing else (missing[0] if missing else where)
        prop = (err.schema.get("properties") or {}).get(missing[0], {}) if missing else {}
        want = f" (expected {json.dumps(prop, ensure_ascii=False)})" if prop else ""
        return f"missing required argument {field!r}{want}"
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = list((err.schema.get("properties") or {}).keys())
        extra = [k for k in err.instance if k not in allowed]
        at = f" in {where!r}" if where else ""
        return f"unexpected argument(s) {', '.join(map(repr, extra))}{at}; allowed: {', '.join(allowed) or '(none)'}"
    field = repr(where) if where else "arguments"
    want = json.dumps({err.validator: err.validator_value}, ensure_ascii=False, default=str)
    return f"argument {field}: {err.message} (schema wants {want})"


def _schema_errors(tool: Tool, arguments: dict[str, Any]) -> str | None:
    errors = sorted(tool.validator.iter_errors(arguments), key=relevance)
    if not errors:
        return None
    # Most relevant first (jsonschema's best_match order), capped so a long list stays readable.
    errors.reverse()
    lines = [_describe(e, arguments) for e in errors[:_MAX_SCHEMA_ERRORS]]
    if len(errors) > _MAX_SCHEMA_ERRORS:
        lines.append(f"... and {len(errors) - _MAX_SCHEMA_ERRORS} more")
    return "; ".join(lines)


# --------------------------------------------------------------------------------------------
# dispatch
# --------------------------------------------------------------------------------------------


async def _decide(tool: Tool, call: ToolCall, policy: SideEffectPolicy | None) -> PolicyDecision:
    if not tool.side_effect:
        return PolicyDecision(ToolDecision.EXECUTED)
    policy = active_shadow() or policy or AllowAll()  # a shadow run never acts, whatever its policy
    try:
        verdict = await policy.decide(tool, call)
        if not isinstance(verdict, PolicyDecision):
            raise TypeError(f"policy returned {type(verdict).__name__}, not PolicyDecision")
        return PolicyDecision(ToolDecision(verdict.decision), str(verdict.reason or ""), verdict.approval_id)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # fail closed: a broken policy must not let side effects through
        return PolicyDecision(ToolDecision.DENIED, f"policy error ({type(exc).__name__}: {exc}); denied")


def not_executed_observation(call: ToolCall, verdict: PolicyDecision, started: float | None = None) -> Observation:
    """What the model sees for a shadowed call or one waiting for approval (not an error: the
    call was valid; it simply did not run)."""
    started = time.monotonic() if started is None else started
    what = {
        ToolDecision.SHADOWED: "was recorded but NOT executed (shadow mode)",
        ToolDecision.PENDING_APPROVAL: "was NOT executed: it is waiting for approval",
    }[verdict.decision]
    body = {"tool": call.name, "decision": verdict.decision.value, "message": f"the call {what}"}
    if verdict.reason:
        body["reason"] = verdict.reason
    if verdict.approval_id:
        body["approval_id"] = verdict.approval_id
    return Observation(
        tool_call_id=call.id,
        tool_name=call.name,
        content=NOT_EXECUTED_PREFIX + json.dumps(body, ensure_ascii=False),
        decision=verdict.decision,
        duration_s=time.monotonic() - started,
        approval_id=verdict.approval_id,
    )


async def dispatch(
    registry: ToolRegistry, call: ToolCall, policy: SideEffectPolicy | None = None
) -> Observation:
    """Run one tool call and return what the model should see. Never raises (except on
    cancellation). `policy` None means AllowAll; only side-effect tools consult it."""
    started = time.monotonic()
    try:
        return await _dispatch(registry, call, policy, started)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # last line of defence: a bug here must not crash the agent loop
        safe = call if isinstance(call, ToolCall) else ToolCall(id="invalid", name=str(call)[:64])
        return _error(safe, ToolErrorCode.EXCEPTION, f"dispatch failed: {type(exc).__name__}: {exc}", started)


async def _dispatch(
    registry: ToolRegistry, call: ToolCall, policy: SideEffectPolicy | None, started: float
) -> Observation:
    tool = registry.get(call.name)
    if tool is None:
        return _error(call, ToolErrorCode.UNKNOWN_TOOL, _unknown_tool_message(call.name, registry), started)

    args = call.arguments
    props = tool.parameters.get("properties") or {}
    if _RAW_KEY in args and _RAW_KEY not in props:
        return _error(
            call,
            ToolErrorCode.INVALID_ARGUMENTS,
            f"arguments must be a JSON object matching the schema; got {args[_RAW_KEY]!r}. "
            f"Expected: {json.dumps(tool.parameters, ensure_ascii=False)}",
            started,
        )
    problems = _schema_errors(tool, args)
    if problems:
        return _error(call, ToolErrorCode.INVALID_ARGUMENTS, problems, started)

    verdict = await _decide(tool, call, policy)
    if verdict.decision == ToolDecision.DENIED:
        reason = verdict.reason or f"the call to {tool.name!r} was denied by policy"
        return _error(call, ToolErrorCode.DENIED, reason, started, decision=ToolDecision.DENIED)
    if verdict.decision in (ToolDecision.SHADOWED, ToolDecision.PENDING_APPROVAL):
        return not_executed_observation(call, verdict, started)

    if not await tool.try_acquire_rate():
        return _error(
            call,
            ToolErrorCode.RATE_LIMITED,
            f"tool {tool.name!r} allows {tool.rate_limit_per_minute:g} calls per minute; limit reached, "
            "try again later or use another tool",
            started,
        )

    price = float(tool.price_usd or 0.0)
    try:
        async with asyncio.timeout(tool.timeout_s):
            result = tool.handler(**args)
            if inspect.isawaitable(result):
                result = await result
    except TimeoutError:
        # asyncio.timeout turns its own cancellation into TimeoutError; a tool raising
        # TimeoutError itself is reported the same way, which is what it means.
        return _error(
            call,
            ToolErrorCode.TIMEOUT,
            f"tool {tool.name!r} did not finish within {tool.timeout_s:g} s",
            started,
            cost_usd=price,
        )
    except ToolArgumentsError as exc:
        return _error(call, ToolErrorCode.INVALID_ARGUMENTS, str(exc), started)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return _error(call, ToolErrorCode.EXCEPTION, f"{type(exc).__name__}: {exc}", started, cost_usd=price)

    return Observation(
        tool_call_id=call.id,
        tool_name=call.name,
        content=render_result(result),
        decision=ToolDecision.EXECUTED,
        duration_s=time.monotonic() - started,
        cost_usd=price,
    )
