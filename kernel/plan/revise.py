"""Turning a replanner's draft into the next plan version: what is kept, dropped and added.

The granularity fixes the scope before the LLM is asked (so the prompt can mark exactly what to
replace) and again when its answer is applied (so a draft cannot quietly rewrite more than it
was allowed to). New steps always get fresh ids; a new step that `replaces` an old one inherits
its lineage (`origin`), and untouched steps that referenced the old id are pointed at the new one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from kernel.plan.model import IdAllocator, Plan, PlanDraft, PlanFormatError, PlanStep, rewrite_refs
from kernel.plan.router import Granularity
from kernel.plan.variables import VariableHealth, VariableTable
from tracer.conventions import ReplanGranularity


class StepStatus(StrEnum):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"  # failed and recorded (after-the-fact); never re-run
    SKIPPED = "skipped"  # could not run because evidence it needed is missing (after-the-fact)


@dataclass
class Revision:
    plan: Plan
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    voided: list[str] = field(default_factory=list)


def known_ids(plan: Plan, variables: VariableTable) -> set[str]:
    return set(plan.ids()) | set(variables.variables)


def replace_scope(
    plan: Plan, status: dict[str, StepStatus], failed_id: str | None, granularity: Granularity
) -> list[str]:
    """Ids of the steps the replanner must replace, in plan order."""
    remaining = [s for s in plan.steps if status.get(s.id) != StepStatus.DONE]
    if granularity == Granularity.PATCH and failed_id is not None:
        known = set(plan.ids())
        return [s.id for s in remaining if s.id == failed_id or failed_id in s.all_deps(known)]
    return [s.id for s in remaining]


def ancestors(plan: Plan, step_id: str, known: set[str]) -> set[str]:
    """Every step `step_id` depends on, directly or not (its premise)."""
    out: set[str] = set()
    todo = [step_id]
    while todo:
        step = plan.get(todo.pop())
        if step is None:
            continue
        for dep in step.all_deps(known):
            if dep not in out:
                out.add(dep)
                todo.append(dep)
    return out


def mark_for_global(
    plan: Plan, variables: VariableTable, failed_id: str | None, reason: str
) -> tuple[list[str], list[str]]:
    """Before a global replan: results the failed step consumed are void (its premise fell with
    it); every other result is stale (computed for a plan that no longer exists). A goal change
    (no failed step) makes everything stale. Returns the ids newly made (void, stale)."""
    void = ancestors(plan, failed_id, known_ids(plan, variables)) if failed_id else set()
    voided, staled = [], []
    for step_id, var in variables.variables.items():
        if var.health == VariableHealth.VOID:
            continue
        if step_id in void:
            variables.mark(step_id, VariableHealth.VOID, f"the premise of {failed_id} fell: {reason}")
            voided.append(step_id)
        elif var.health == VariableHealth.CLEAN:  # already stale: invalidated (and counted) before
            variables.mark(step_id, VariableHealth.STALE, f"computed before a global replan: {reason}")
            staled.append(step_id)
    return voided, staled


def revise(
    plan: Plan,
    status: dict[str, StepStatus],
    draft: PlanDraft,
    granularity: Granularity,
    failed_id: str | None,
    ids: IdAllocator,
    variables: VariableTable,
) -> Revision:
    """The next version. Raises PlanFormatError when the draft contradicts its scope."""
    scope = replace_scope(plan, status, failed_id, granularity)
    scope_set = set(scope)
    labels = [d.id for d in draft.steps]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise PlanFormatError(f"step ids used twice in the new steps: {', '.join(dupes)}")
    mapping = {label: ids.take() for label in labels}
    version = plan.version + 1
    by_id = {s.id: s for s in plan.steps}
    alias: dict[str, str] = {}
    new_steps: list[PlanStep] = []
    for d in draft.steps:
        new_id = mapping[d.id]
        origin = new_id
        if d.replaces:
            if d.replaces not in scope_set:  # an earlier id of the same lineage names its heir
                d.replaces = next((x for x in scope if by_id[x].origin == d.replaces), d.replaces)
            if d.replaces not in scope_set:
                raise PlanFormatError(
                    f"{d.id} replaces {d.replaces}, which is not among the steps to replace "
                    f"({', '.join(scope) or 'none'})"
                )
            alias[d.replaces] = new_id
            origin = by_id[d.replaces].origin
        fallback = d.fallback.model_copy(update={"args": rewrite_refs(d.fallback.args, mapping)}) if d.fallback else None
        new_steps.append(
            PlanStep(
                id=new_id,
                action=d.action,
                tool=d.tool,
                args=rewrite_refs(d.args, mapping),
                depends_on=[mapping.get(x, x) for x in d.depends_on],
                on_failure=d.on_failure,
                fallback=fallback,
                expect=d.expect,
                premise=d.premise,
                origin=origin,
                version=version,
            )
        )
    # A replaced step the draft did not name in `replaces` is taken over by the first unclaimed
    # new step using the same tool (the failed step first): its lineage carries on, so breakers
    # still see "the same step failing", and untouched steps that read it are pointed at the heir.
    claimed = set(alias.values())
    order = ([failed_id] if failed_id in scope_set else []) + [x for x in scope if x != failed_id]
    for old_id in order:
        if old_id in alias:
            continue
        heir = next((s for s in new_steps if s.tool == by_id[old_id].tool and s.id not in claimed), None)
        if heir is not None:
            alias[old_id] = heir.id
            claimed.add(heir.id)
            heir.origin = by_id[old_id].origin
    if alias:  # new steps may also name a replaced step by its old id: point them at the heir
        for s in new_steps:
            s.args = rewrite_refs(s.args, alias)
            s.depends_on = [alias.get(x, x) for x in s.depends_on]

    kept: list[PlanStep] = []
    if granularity != Granularity.GLOBAL:
        for s in plan.steps:
            if s.id in scope_set:
                continue
            if status.get(s.id) == StepStatus.DONE:
                kept.append(s)
            else:
                kept.append(
                    s.model_copy(
                        update={
                            "args": rewrite_refs(s.args, alias),
                            "depends_on": [alias.get(x, x) for x in s.depends_on],
                        }
                    )
                )
    if granularity == Granularity.GLOBAL:
        steps = new_steps
    else:
        first = min((plan.ids().index(x) for x in scope), default=len(plan.steps))
        before = [s for s in kept if plan.ids().index(s.id) < first]
        after = [s for s in kept if plan.ids().index(s.id) > first]
        steps = before + new_steps + after
    answer = rewrite_refs(draft.answer, mapping) if draft.answer else None
    if answer is None and granularity != Granularity.GLOBAL and plan.answer:
        answer = rewrite_refs(plan.answer, alias)
    new_plan = Plan(
        version=version,
        steps=steps,
        answer=answer,
        cause=draft.cause,
        granularity=ReplanGranularity(granularity.value),
    )
    dropped = scope if granularity != Granularity.GLOBAL else plan.ids()
    return Revision(
        plan=new_plan,
        kept=[s.id for s in kept],
        dropped=list(dropped),
        added=[s.id for s in new_steps],
    )


def first_plan(draft: PlanDraft, ids: IdAllocator) -> Plan:
    """Version 1 from the planner's draft, with kernel-assigned ids."""
    labels = [d.id for d in draft.steps]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise PlanFormatError(f"step ids used twice: {', '.join(dupes)}")
    if any(d.replaces for d in draft.steps):
        raise PlanFormatError("a first plan has nothing to replace")
    mapping = {label: ids.take() for label in labels}
    steps = []
    for d in draft.steps:
        new_id = mapping[d.id]
        fallback = d.fallback.model_copy(update={"args": rewrite_refs(d.fallback.args, mapping)}) if d.fallback else None
        steps.append(
            PlanStep(
                id=new_id,
                action=d.action,
                tool=d.tool,
                args=rewrite_refs(d.args, mapping),
                depends_on=[mapping.get(x, x) for x in d.depends_on],
                on_failure=d.on_failure,
                fallback=fallback,
                expect=d.expect,
                premise=d.premise,
                origin=new_id,
                version=1,
            )
        )
    answer = rewrite_refs(draft.answer, mapping) if draft.answer else None
    return Plan(version=1, steps=steps, answer=answer)
