"""LLM-as-judge: the prompt from a run, the judge call, its answer read as a score.

Why the judge call runs in a child process (`python -m kernel.eval.judge`): the call goes through
the kernel's LLM adapters (OpenAI-compatible endpoint, retries, fallback) and is traced by the
tracer as a run of its own (`steplens.run.mode=eval`) exported over OTLP into this server. ingest
never imports kernel (design.md §1), and the tracer's pipeline is process-wide state that must not
live inside the server (whose own clients and tests configure tracing too). A child per call also
bounds a hung judge: it is killed at `timeout_s`. The two sides share only the JSON documents below.

Why malformed output is retried with a fresh call and then recorded as an error: a judge that
answers prose instead of the JSON asked for is common and usually transient; a rule whose judge
never answers right must show as errors on the evaluators page, not crash or stall the service.
"""

from __future__ import annotations

import json
import math
import os
import re
import string
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from ingest.evaluators.rules import JudgeParams, ScoreSpec, eval_run_id
from ingest.evaluators.run_view import RunView

JUDGE_MODULE = "kernel.eval.judge"
JUDGE_SERVICE_NAME = "steplens-evaluator"
JUDGE_AGENT = "steplens-judge"
_CUT = "\n…[{n} more characters cut]"
_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_TRUE = {"true", "yes", "pass", "passed", "correct", "1"}
_FALSE = {"false", "no", "fail", "failed", "incorrect", "0"}


class JudgeError(Exception):
    """The judge could not give a score; `retryable` says whether trying again later may help."""

    def __init__(self, message: str, *, retryable: bool, cost_usd: float = 0.0,
                 trace_ids: list[str] | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.cost_usd = cost_usd
        self.trace_ids = trace_ids or []


@dataclass(frozen=True)
class JudgeVerdict:
    value: bool | float | str
    reason: str
    cost_usd: float
    trace_ids: list[str] = field(default_factory=list)  # the judge's own runs, the last one scored
    input_tokens: int = 0
    output_tokens: int = 0


# ---- the prompt --------------------------------------------------------------------------------


def _bounded(text: str | None, limit: int) -> str:
    if not text:
        return "(none recorded)"
    return text if len(text) <= limit else text[:limit] + _CUT.format(n=len(text) - limit)


def _value_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def steps_text(run: RunView) -> str:
    lines = []
    for step in run.step_views:
        line = f"{step.index}. {step.action or '(no action)'}"
        if step.thought:
            line += f" (thought: {step.thought})"
        lines.append(line)
    if not lines and run.tool_calls:
        lines = [f"{i}. {t.name}" for i, t in enumerate(run.tool_calls, 1)]
    return "\n".join(lines)


def tools_text(run: RunView) -> str:
    lines = []
    for call in run.tool_calls:
        outcome = f"ERROR {call.error_type or ''}".strip() if not call.ok else _value_text(call.result)
        lines.append(f"- {call.name}({_value_text(call.arguments)}) -> {outcome}")
    return "\n".join(lines)


def output_format(score: ScoreSpec) -> str:
    """What the judge is told to answer: one JSON object in the score's type."""
    if score.type == "boolean":
        kind = "true or false"
    elif score.type == "numeric":
        low = "-inf" if score.min is None else f"{score.min:g}"
        high = "inf" if score.max is None else f"{score.max:g}"
        kind = f"a number from {low} to {high}"
    else:
        kind = "one of " + ", ".join(json.dumps(label) for label in score.labels or [])
    return (f'Reply with one JSON object and nothing else: {{"score": <{kind}>, "reason": "<one or two '
            f'sentences>"}}. The score is named {score.name!r}.')


def render_prompt(run: RunView, params: JudgeParams) -> str:
    """The user message: the template filled with the run, each part cut to `max_field_chars`."""
    limit = params.max_field_chars
    values = {
        "task": _bounded(run.task, limit),
        "answer": _bounded(run.answer, limit),
        "steps": _bounded(steps_text(run), limit),
        "tool_results": _bounded(tools_text(run), limit),
        "question": params.question,
        "agent": f"{run.agent or '?'} {run.version or ''}".strip(),
    }
    return string.Template(params.prompt).safe_substitute(values)


def system_prompt(score: ScoreSpec) -> str:
    return ("You are a strict, fair evaluator of AI agent runs. Judge only from what you are shown. "
            + output_format(score))


# ---- reading the answer ------------------------------------------------------------------------


def _json_object(text: str) -> dict[str, Any] | None:
    candidates = [text.strip()]
    candidates += _FENCE.findall(text)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def parse_verdict(text: str | None, score: ScoreSpec) -> tuple[bool | float | str, str]:
    """(value, reason) from the judge's answer; ValueError saying what was wrong otherwise."""
    if not text or not text.strip():
        raise ValueError("the judge answered nothing")
    obj = _json_object(text)
    if obj is None:
        raise ValueError(f"the judge's answer is not a JSON object: {text[:200]!r}")
    if "score" not in obj:
        raise ValueError(f"the judge's answer has no \"score\": {text[:200]!r}")
    raw, reason = obj["score"], obj.get("reason")
    reason = reason if isinstance(reason, str) and reason.strip() else "(the judge gave no reason)"
    if score.type == "boolean":
        if isinstance(raw, bool):
            return raw, reason
        word = str(raw).strip().lower()
        if word in _TRUE:
            return True, reason
        if word in _FALSE:
            return False, reason
        raise ValueError(f"score {raw!r} is not true or false")
    if score.type == "numeric":
        try:
            number = float(raw) if not isinstance(raw, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number):
            raise ValueError(f"score {raw!r} is not a number")
        if (score.min is not None and number < score.min) or (score.max is not None and number > score.max):
            raise ValueError(f"score {number:g} is outside {score.min:g}..{score.max:g}"
                             if score.min is not None and score.max is not None else f"score {number:g} out of range")
        return number, reason
    labels = {label.casefold(): label for label in score.labels or []}
    label = labels.get(str(raw).strip().casefold())
    if label is None:
        raise ValueError(f"score {raw!r} is not one of {', '.join(score.labels or [])}")
    return label, reason


# ---- the call ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceTarget:
    """Where the judge's own run is exported: this server's OTLP endpoint, with a key of the project."""

    endpoint: str | None  # http://127.0.0.1:PORT/v1/traces; None: the judge run is not traced
    api_key: str | None = None


def _request(run: RunView, rule: str, params: JudgeParams, score: ScoreSpec, endpoint: str | None) -> dict[str, Any]:
    models = [params.model, *params.fallback_models]
    return {
        "system": system_prompt(score),
        "prompt": render_prompt(run, params),
        "models": [{"model": m, "base_url": params.base_url, "api_key_env": params.api_key_env} for m in models],
        "temperature": params.temperature,
        "max_tokens": params.max_tokens,
        "agent": JUDGE_AGENT,
        "version": rule,
        "eval_run_id": eval_run_id(rule),
        "eval_case_id": run.trace_id,
        "endpoint": endpoint,
    }


def call_worker(request: dict[str, Any], target: TraceTarget, timeout_s: float) -> dict[str, Any]:
    """One judge run in a child process; its JSON answer, or JudgeError (retryable) when it failed."""
    env = dict(os.environ)
    env["OTEL_SERVICE_NAME"] = JUDGE_SERVICE_NAME
    env.pop("OTEL_EXPORTER_OTLP_TRACES_HEADERS", None)
    if target.api_key:  # the standard variable the OTLP exporter reads: the key never appears in argv
        env["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] = f"x-api-key={target.api_key}"
    try:
        done = subprocess.run(  # noqa: S603 - a fixed module of this installation, no shell
            [sys.executable, "-m", JUDGE_MODULE], input=json.dumps(request), capture_output=True, text=True,
            timeout=timeout_s, env=env, check=False,
        )
    except subprocess.TimeoutExpired:
        raise JudgeError(f"the judge took longer than {timeout_s:g} s", retryable=True) from None
    except OSError as exc:
        raise JudgeError(f"the judge process could not start: {exc}", retryable=True) from None
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        answer = None
    if done.returncode != 0 or not isinstance(answer, dict):
        tail = (done.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise JudgeError(f"the judge process failed (exit {done.returncode}): {tail[0][:300]}", retryable=True)
    return answer


def judge_run(run: RunView, rule: str, params: JudgeParams, score: ScoreSpec, target: TraceTarget) -> JudgeVerdict:
    """Ask the judge (up to `params.attempts` times while its answer cannot be read)."""
    cost, trace_ids, tokens_in, tokens_out = 0.0, [], 0, 0
    problem = ""
    for _ in range(params.attempts):
        answer = call_worker(_request(run, rule, params, score, target.endpoint), target, params.timeout_s)
        cost += float(answer.get("cost_usd") or 0.0)
        tokens_in += int(answer.get("input_tokens") or 0)
        tokens_out += int(answer.get("output_tokens") or 0)
        if answer.get("trace_id"):
            trace_ids.append(str(answer["trace_id"]))
        if not answer.get("ok"):
            raise JudgeError(f"the judge model failed: {answer.get('error') or answer.get('stop_reason')}",
                             retryable=True, cost_usd=cost, trace_ids=trace_ids)
        try:
            value, reason = parse_verdict(answer.get("answer"), score)
        except ValueError as exc:
            problem = str(exc)
            continue
        return JudgeVerdict(value, reason, cost, trace_ids, tokens_in, tokens_out)
    raise JudgeError(f"judge output unreadable after {params.attempts} attempt(s): {problem}", retryable=False,
                     cost_usd=cost, trace_ids=trace_ids)
