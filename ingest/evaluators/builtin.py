"""The deterministic built-in evaluators: each turns a run into a pass/fail verdict with a reason.

Why a verdict always has a reason: a failed `mentions_refund` score on the trace page is only
useful when it says what was missing ("answer lacks 'refund'"), and the same reason goes into
the score's comment. A run the evaluator cannot judge (no answer recorded, content capture off) is
a failed verdict saying so, never an exception: errors are data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from ingest.evaluators.rules import (
    ContainsParams,
    ForbiddenToolsParams,
    JsonSchemaParams,
    MaxCostParams,
    MaxLatencyParams,
    MaxStepsParams,
    NoToolErrorParams,
    RegexParams,
    ToolSequenceParams,
)
from ingest.evaluators.run_view import RunView

_NO_ANSWER = "the run recorded no answer (failed run, or content capture off)"


@dataclass(frozen=True)
class Verdict:
    """A built-in's judgment: `passed` and why. The score value is derived from it (`score_value`)."""

    passed: bool
    reason: str


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def contains(run: RunView, p: ContainsParams) -> Verdict:
    if run.answer is None:
        return Verdict(False, _NO_ANSWER)
    fold = (lambda s: s) if p.case_sensitive else str.casefold
    answer = fold(run.answer)
    found = [t for t in p.text if fold(t) in answer]
    missing = [t for t in p.text if t not in found]
    if p.match == "any":
        return Verdict(bool(found), f"answer contains {found[0]!r}" if found
                       else f"answer contains none of {', '.join(map(repr, p.text))}")
    return Verdict(not missing, f"answer lacks {', '.join(map(repr, missing))}" if missing
                   else f"answer contains {', '.join(map(repr, p.text))}")


def regex(run: RunView, p: RegexParams) -> Verdict:
    if run.answer is None:
        return Verdict(False, _NO_ANSWER)
    match = re.search(p.pattern, run.answer, re.IGNORECASE if p.ignore_case else 0)
    if match is None:
        return Verdict(False, f"answer does not match /{p.pattern}/")
    return Verdict(True, f"answer matches /{p.pattern}/ at {match.start()}: {_short(match.group(0), 60)!r}")


def json_schema(run: RunView, p: JsonSchemaParams) -> Verdict:
    import jsonschema

    if run.answer is None:
        return Verdict(False, _NO_ANSWER)
    try:
        document = json.loads(run.answer)
    except ValueError as exc:
        return Verdict(False, f"answer is not JSON: {exc}")
    validator = jsonschema.validators.validator_for(p.json_schema)(p.json_schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(root)"
        return Verdict(False, f"answer breaks the schema at {where}: {_short(error.message)}")
    return Verdict(True, "answer is valid against the schema")


def _is_subsequence(wanted: list[str], calls: list[str]) -> bool:
    it = iter(calls)
    return all(any(call == name for call in it) for name in wanted)


def tool_sequence(run: RunView, p: ToolSequenceParams) -> Verdict:
    calls = run.tool_names
    ok = calls == p.tools if p.exact else _is_subsequence(p.tools, calls)
    how = "exactly" if p.exact else "in this order"
    called = " → ".join(calls) or "no tools"
    if ok:
        return Verdict(True, f"called {' → '.join(p.tools)} {how}")
    return Verdict(False, f"expected {' → '.join(p.tools)} {how}; called {called}")


def forbidden_tools(run: RunView, p: ForbiddenToolsParams) -> Verdict:
    used = sorted({name for name in run.tool_names if name in set(p.tools)})
    if used:
        return Verdict(False, f"called forbidden tool(s) {', '.join(used)}")
    return Verdict(True, f"called none of {', '.join(p.tools)}")


def max_steps(run: RunView, p: MaxStepsParams) -> Verdict:
    if run.steps is None:
        return Verdict(False, "the run has no step count")
    return Verdict(run.steps <= p.limit, f"{run.steps} steps (limit {p.limit})")


def max_cost(run: RunView, p: MaxCostParams) -> Verdict:
    if run.cost_usd is None:
        return Verdict(False, "the run has no known cost (no priced call)")
    return Verdict(run.cost_usd <= p.limit_usd, f"cost ${run.cost_usd:.6f} (limit ${p.limit_usd:g})")


def max_latency(run: RunView, p: MaxLatencyParams) -> Verdict:
    if run.duration_ms is None:
        return Verdict(False, "the run has no duration (its top span has not arrived)")
    seconds = run.duration_ms / 1000
    return Verdict(seconds <= p.limit_s, f"took {seconds:.3f} s (limit {p.limit_s:g} s)")


def no_tool_error(run: RunView, p: NoToolErrorParams) -> Verdict:
    failed = [t for t in run.tool_calls if not t.ok]
    if failed:
        first = failed[0]
        return Verdict(False, f"{len(failed)} tool call(s) failed; first {first.name}: {first.error_type or 'error'}")
    return Verdict(True, f"all {len(run.tool_calls)} tool call(s) succeeded")


BUILTINS: dict[str, Callable[[RunView, object], Verdict]] = {
    "contains": contains,  # type: ignore[dict-item]
    "regex": regex,  # type: ignore[dict-item]
    "json_schema": json_schema,  # type: ignore[dict-item]
    "tool_sequence": tool_sequence,  # type: ignore[dict-item]
    "forbidden_tools": forbidden_tools,  # type: ignore[dict-item]
    "max_steps": max_steps,  # type: ignore[dict-item]
    "max_cost": max_cost,  # type: ignore[dict-item]
    "max_latency": max_latency,  # type: ignore[dict-item]
    "no_tool_error": no_tool_error,  # type: ignore[dict-item]
}


def run_builtin(run: RunView, params: object) -> Verdict:
    """The verdict of the built-in `params.kind` on `run`."""
    return BUILTINS[params.kind](run, params)  # type: ignore[attr-defined]
