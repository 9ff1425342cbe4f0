"""Static checks a plan must pass before anything runs: cheap to do now, costly to find mid-run.

A plan that fails is treated like a malformed reply (a format error the breakers count), never
executed halfway.
"""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter

from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from kernel.plan.model import Plan, find_refs
from kernel.plan.variables import VariableTable
from kernel.tools import ToolRegistry


def check_plan(plan: Plan, variables: VariableTable, tools: ToolRegistry | None = None) -> list[str]:
    """Problems with `plan` (empty when it may run): duplicate ids, unknown tools, dependencies
    and references that point nowhere or at a void variable, cycles."""
    problems: list[str] = []
    ids = plan.ids()
    seen: set[str] = set()
    for step_id in ids:
        if step_id in seen:
            problems.append(f"step id {step_id} is used twice")
        seen.add(step_id)
    known = set(ids) | set(variables.variables)
    graph: dict[str, set[str]] = {}
    for step in plan.steps:
        if tools is not None:
            if step.tool not in tools:
                problems.append(f"{step.id}: unknown tool {step.tool!r}")
            if step.fallback is not None and step.fallback.tool not in tools:
                problems.append(f"{step.id}: unknown fallback tool {step.fallback.tool!r}")
        if step.expect is not None:
            try:
                validator_for(step.expect).check_schema(step.expect)
            except SchemaError as exc:
                problems.append(f"{step.id}: `expect` is not a valid JSON Schema: {exc.message}")
        deps = set(step.depends_on)
        refs = find_refs(step.args, known)
        if step.fallback is not None:
            refs += find_refs(step.fallback.args, known)
        for ref in refs:
            deps.add(ref.step_id)
        graph[step.id] = set()
        for dep in sorted(deps):
            if dep == step.id:
                problems.append(f"{step.id} depends on itself")
            elif dep in seen:
                graph[step.id].add(dep)
            elif dep in variables:
                if not variables.readable(dep):
                    problems.append(f"{step.id} reads {dep}, whose output is void")
            else:
                problems.append(f"{step.id} refers to {dep}, which is neither a step of the plan nor a result")
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        cycle = exc.args[1] if len(exc.args) > 1 else []
        problems.append(f"dependency cycle: {' -> '.join(map(str, cycle))}")
    if plan.answer:
        for ref in find_refs(plan.answer, known):
            if ref.step_id not in seen and not variables.readable(ref.step_id):
                problems.append(f"the answer refers to {ref.step_id}, which no step produces")
    return problems
