"""The demo's gray release: ops v2 reaches users through `kernel.release.Release`, sticky per user.

The history's gradual ops v2 rollout (`kernel.examples.history`: 30% of ops traffic from day 9, all
of it from day 12) is a real gray release here. Inside the partial window a live ops run's version
is the one `Release("ops-v2", v1, v2, share=0.3)` routes its user to (the same user always gets the
same version, so a conversation never switches), its run span says so (`steplens.release.name`
ops-v2, cohort stable or candidate), and runs of the users in the release's shadow share are also
mirrored by a v2 shadow on the same task (mode shadow, linked to the live run, side effects recorded,
answer discarded). Each mirror stands for one of the history's planned shadow runs (those are
dropped one for one), so `--runs N` still stores N runs.
So the Regressions page's "Candidate vs stable" shows ops v2 against v1 over the same days, next
to the release comparison that also sees the weeks before and after.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING

from kernel.examples import ticket
from kernel.examples.catalog import build_agent
from kernel.examples.history import RELEASED_AGENT, ROLLOUT_SHARE, PlannedRun, Story
from kernel.release import Release, ShadowRun, bucket
from kernel.types import RunResult
from tracer.clock import shifted
from tracer.conventions import ReleaseCohort

if TYPE_CHECKING:
    from kernel.examples.demo_features import DemoFeatures

RELEASE_NAME = f"{RELEASED_AGENT}-v2"
STABLE, CANDIDATE = "v1", "v2"
MIRROR_SHARE = 0.5


def _in_window(story: Story, start: datetime | None) -> bool:
    partial, full = story.rollout
    return start is not None and partial <= start < full


def route_rollout(story: Story, plans: list[PlannedRun]) -> list[PlannedRun]:
    """`plans` with the live ops runs of the partial rollout routed by the release: version by the
    user's bucket (as `Release.route` decides it), `release` set so `execute_released` runs them;
    the first of them whose user is in the shadow share are mirrored, as many as there are planned
    shadow runs, and that many planned shadow runs are dropped."""
    routed = []
    for plan in plans:
        if plan.agent == RELEASED_AGENT and plan.mode == "live" and plan.user_id and _in_window(story, plan.start):
            version = CANDIDATE if bucket(RELEASE_NAME, plan.user_id) < ROLLOUT_SHARE else STABLE
            plan = dataclasses.replace(plan, version=version, release=RELEASE_NAME)
        routed.append(plan)
    planned_shadows = [p.index for p in routed if p.mode == "shadow"]
    eligible = [p.index for p in routed if p.release is not None and bucket(f"{RELEASE_NAME}/shadow", p.user_id or "")
                < MIRROR_SHARE]
    count = min(len(planned_shadows), len(eligible))
    mirrored, dropped = set(eligible[:count]), set(planned_shadows[:count])
    return [dataclasses.replace(p, mirror=True) if p.index in mirrored else p for p in routed if p.index not in dropped]


async def execute_released(
    plan: PlannedRun, latency_s: tuple[float, float] = (0.0, 0.0), features: DemoFeatures | None = None
) -> tuple[RunResult, Counter[str], list[ShadowRun]]:
    """Run a routed plan through the release (and its shadow, waited for): the live result, the
    faults its models injected, and the finished shadow runs. `features`: the workload's MCP tools,
    memory and hand-off policy, given to both versions and the mirror as `execute` gives them."""
    if features is None:
        return await _execute_released(plan, latency_s, None)
    async with features.turn(plan):
        return await _execute_released(plan, latency_s, features)


async def _execute_released(
    plan: PlannedRun, latency_s: tuple[float, float], features: DemoFeatures | None
) -> tuple[RunResult, Counter[str], list[ShadowRun]]:
    extra = features.options(plan) if features is not None else {}
    built = {v: build_agent(plan.agent, v, seed=plan.seed, faults=plan.faults, latency_s=latency_s, **extra)
             for v in (STABLE, CANDIDATE)}
    mirror = build_agent(plan.agent, CANDIDATE, seed=f"{plan.seed}:shadow", faults=plan.faults, latency_s=latency_s,
                         **extra)
    release = Release(RELEASE_NAME, built[STABLE].agent, built[CANDIDATE].agent, share=ROLLOUT_SHARE,
                      shadow=mirror.agent if plan.mirror else None, shadow_share=MIRROR_SHARE)
    cohort = release.route(release.key_of(plan.user_id, plan.conversation_id)).cohort
    used = built[CANDIDATE if cohort == ReleaseCohort.CANDIDATE else STABLE]
    if used.agent.version != plan.version:
        raise RuntimeError(f"release {RELEASE_NAME} routed {plan.user_id} to {used.agent.version}, planned {plan.version}")
    with contextlib.ExitStack() as scope:
        if plan.start is not None:
            scope.enter_context(shifted(plan.start.timestamp() - time.time()))
        token = ticket.CARRIER_LATENCY_S.set(plan.carrier_latency_s)
        try:
            result = await release.run(plan.task, user_id=plan.user_id, conversation_id=plan.conversation_id)
            shadows = await release.drain()
        finally:
            ticket.CARRIER_LATENCY_S.reset(token)
    injected: Counter[str] = Counter()
    for model in used.models:
        injected.update(model.injected)
    return result, injected, shadows


def shadow_plan(plan: PlannedRun) -> PlannedRun:
    """The plan a shadow mirror of `plan` stands for in the demo's summary (mode shadow, v2)."""
    return dataclasses.replace(plan, version=CANDIDATE, mode="shadow", conversation_id=None, user_id=None)
