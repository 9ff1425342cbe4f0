"""The three prompts of plan-and-execute: plan, replan, solve.

The replan prompt is deliberately narrow. Its user message carries exactly four parts: the
user's original goal, one line per completed step with a capped output summary, the structured
failure signal (with the lesson book), and the remaining plan. Never full observations and never
old replan transcripts: those make the prompt grow with every round and pull the model back to
what already failed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from kernel.plan.model import PlanStep
from kernel.plan.router import Granularity
from kernel.plan.signals import FailureSignal, cap
from kernel.plan.variables import VariableHealth, VariableTable
from kernel.tools import ToolRegistry
from kernel.types import Message

SUMMARY_CAP = 80
EVIDENCE_CAP = 400

PLAN_FORMAT = """\
Reply with one JSON object and nothing else:
{"steps": [{"id": "E1", "action": "<what the step does>", "tool": "<tool name>", "args": {<arguments>},
  "depends_on": ["<ids of steps it needs>"], "on_failure": "replan" or "after_the_fact",
  "fallback": {"tool": "<tool>", "args": {}} (optional), "expect": <JSON Schema the output must match> (optional),
  "premise": true when the whole plan relies on this step (optional)}],
 "answer": "<optional final answer using references>"}
An argument may use an earlier step's output: "#E2" is its whole output, "#E2.rows" one field of it."""

REPLAN_FORMAT = (
    PLAN_FORMAT
    + """
Add "cause": "<one line: why the plan changes>". List only NEW steps; a new step that takes the
place of a step to replace names it in "replaces". "void": ["<ids of results that must not be used>"] is optional."""
)

PLANNER_SYSTEM = (
    "You plan before you act. Break the user's goal into tool calls; steps that do not need each "
    "other's output run at the same time."
)
REPLANNER_SYSTEM = (
    "A step of your plan failed. Repair the plan: replace the steps marked [replace] so that the "
    "goal is still reached, and do not repeat what the lessons say already failed."
)
SOLVER_SYSTEM = (
    "Answer the user's goal from the evidence the plan gathered, and only from it. Some evidence "
    "may be missing: say plainly which evidence is missing and what the answer therefore cannot cover."
)


def _tools_block(tools: ToolRegistry) -> str:
    return f"Available tools:\n{tools.as_prompt_text()}"


def _args(step: PlanStep) -> str:
    return json.dumps(step.args, ensure_ascii=False, sort_keys=True, default=repr)


def goal_text(goal: str, changes: Iterable[str]) -> str:
    lines = [goal]
    lines += [f"Goal changed mid-run: {c}" for c in changes]
    return "\n".join(lines)


def plan_messages(goal: str, tools: ToolRegistry, memories: str = "") -> list[Message]:
    """The planner call; `memories` is long-term memory's recall block (already within its cap)."""
    system = f"{PLANNER_SYSTEM}\n\n{_tools_block(tools)}\n\n{PLAN_FORMAT}"
    if memories:
        system = f"{system}\n\n{memories}"
    return [Message(role="system", content=system), Message(role="user", content=goal)]


def completed_lines(steps: Iterable[PlanStep], variables: VariableTable) -> list[str]:
    """One line per completed step: id, tool, action, health when not clean, capped summary."""
    lines = []
    for step in steps:
        var = variables.get(step.id)
        if var is None:
            continue
        health = "" if var.health == VariableHealth.CLEAN else f" [{var.health.value}]"
        lines.append(f"{step.id} {step.tool}: {step.action}{health} -> {cap(var.text, SUMMARY_CAP)}")
    return lines


def remaining_lines(steps: Iterable[PlanStep], replace: set[str]) -> list[str]:
    lines = []
    for step in steps:
        mark = " [replace]" if step.id in replace else ""
        deps = f" depends_on: {', '.join(step.depends_on)}" if step.depends_on else ""
        lines.append(f"{step.id}{mark} {step.tool}({_args(step)}){deps}: {step.action}")
    return lines


def signal_block(signal: FailureSignal, granularity: Granularity, replace: list[str], lessons: list[str]) -> str:
    body = {
        "failed_step": signal.step_id,
        "tool": signal.tool,
        "kind": signal.kind.value,
        "message": signal.message,
        "recovery_attempted": signal.recovery,
        "evidence": signal.evidence,
        "granularity": granularity.value,
        "replace": replace,
        "lessons": lessons,
    }
    return json.dumps(body, ensure_ascii=False, indent=1, default=repr)


def replan_messages(
    *,
    goal: str,
    completed: list[str],
    signal: str,
    remaining: list[str],
    tools: ToolRegistry,
) -> list[Message]:
    """The replan call: a fixed system message, then the four parts in one user message."""
    parts = [
        f"## Goal\n{goal}",
        "## Completed steps\n" + ("\n".join(completed) if completed else "(none)"),
        f"## Failure\n{signal}",
        "## Remaining plan\n" + ("\n".join(remaining) if remaining else "(none)"),
    ]
    return [
        Message(role="system", content=f"{REPLANNER_SYSTEM}\n\n{_tools_block(tools)}\n\n{REPLAN_FORMAT}"),
        Message(role="user", content="\n\n".join(parts)),
    ]


def solver_messages(goal: str, evidence: list[str], missing: list[str]) -> list[Message]:
    body = f"## Goal\n{goal}\n\n## Evidence\n" + ("\n".join(evidence) if evidence else "(none)")
    if missing:
        body += "\n\n## Missing evidence\n" + "\n".join(missing)
    return [Message(role="system", content=SOLVER_SYSTEM), Message(role="user", content=body)]


def evidence_line(step: PlanStep, variables: VariableTable) -> str | None:
    var = variables.get(step.id)
    if var is None:
        return None
    return f"{step.id} {step.tool}: {step.action} -> {cap(var.text, EVIDENCE_CAP)}"
