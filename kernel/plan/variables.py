"""The variable table: each completed step's output, and whether it can still be trusted.

Health exists because a global replan does not erase what was learned, but some of it was
computed under a premise that just fell. `stale` results may still be read (they are flagged);
`void` ones may not: the checker refuses a plan that reads one, so wrong data cannot quietly
flow into the new plan.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kernel.plan.model import REF_RE, find_refs

_PATH_PART_RE = re.compile(r"\.([A-Za-z0-9_-]+)|\[(\d+)\]")


class VariableHealth(StrEnum):
    CLEAN = "clean"
    STALE = "stale"
    VOID = "void"


@dataclass
class Variable:
    step_id: str
    tool: str
    action: str
    text: str  # the output as the tool returned it
    value: Any  # parsed JSON when the output is JSON, else the text
    version: int
    cost_usd: float = 0.0
    health: VariableHealth = VariableHealth.CLEAN
    health_reason: str | None = None


class ResolveError(Exception):
    """A reference could not be filled. `kind` is the failure kind it signals:
    `missing_variable` (no usable output under that id) or `assumption` (the output exists but has
    not the shape the plan assumed)."""

    def __init__(self, kind: str, ref: str, detail: str) -> None:
        super().__init__(f"{ref}: {detail}")
        self.kind = kind
        self.ref = ref
        self.detail = detail


def parse_output(text: str) -> Any:
    """JSON outputs become values a path can walk; anything else stays text."""
    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return text


@dataclass
class VariableTable:
    variables: dict[str, Variable] = field(default_factory=dict)

    def put(self, var: Variable) -> None:
        self.variables[var.step_id] = var

    def get(self, step_id: str) -> Variable | None:
        return self.variables.get(step_id)

    def __contains__(self, step_id: object) -> bool:
        return step_id in self.variables

    def readable(self, step_id: str) -> bool:
        var = self.variables.get(step_id)
        return var is not None and var.health != VariableHealth.VOID

    def mark(self, step_id: str, health: VariableHealth, reason: str) -> None:
        """Lower a variable's health (never raise it: void stays void)."""
        var = self.variables.get(step_id)
        if var is None:
            return
        order = list(VariableHealth)
        if order.index(health) > order.index(var.health):
            var.health, var.health_reason = health, reason

    def health(self) -> dict[str, VariableHealth]:
        return {k: v.health for k, v in self.variables.items()}

    # ---- resolving references ---------------------------------------------------------------

    def lookup(self, step_id: str, path: str, ref: str) -> Any:
        var = self.variables.get(step_id)
        if var is None:
            raise ResolveError("missing_variable", ref, f"no output of step {step_id} is available")
        if var.health == VariableHealth.VOID:
            raise ResolveError("missing_variable", ref, f"the output of {step_id} is void ({var.health_reason})")
        value = var.value
        walked = ""
        for m in _PATH_PART_RE.finditer(path):
            key, index = m.group(1), m.group(2)
            walked += m.group(0)
            if key is not None:
                if isinstance(value, dict) and key in value:
                    value = value[key]
                    continue
                if isinstance(value, list) and key.isdigit() and int(key) < len(value):
                    value = value[int(key)]
                    continue
                raise ResolveError("assumption", ref, f"{step_id}{walked} does not exist ({_shape(value)})")
            i = int(index)
            if isinstance(value, list) and i < len(value):
                value = value[i]
                continue
            raise ResolveError("assumption", ref, f"{step_id}{walked} does not exist ({_shape(value)})")
        return value

    def resolve(self, value: Any, known: set[str]) -> Any:
        """`value` with references filled in. A string that is exactly one reference becomes the
        referenced value itself (a list stays a list); references inside longer text become text."""
        if isinstance(value, str):
            refs = find_refs(value, known)
            if not refs:
                return value
            if len(refs) == 1 and refs[0].text == value.strip():
                return self.lookup(refs[0].step_id, refs[0].path, refs[0].text)

            def sub(m: re.Match[str]) -> str:
                if not find_refs(m.group(0), known):
                    return m.group(0)
                got = self.lookup(m.group(1), m.group(2), m.group(0))
                return got if isinstance(got, str) else json.dumps(got, ensure_ascii=False, default=repr)

            return REF_RE.sub(sub, value)
        if isinstance(value, dict):
            return {k: self.resolve(v, known) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, known) for v in value]
        return value


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(list(value)[:8])
        return f"it is an object with keys: {keys}" if keys else "it is an empty object"
    if isinstance(value, list):
        return f"it is a list of {len(value)}"
    return f"it is {type(value).__name__}"
