"""Real kernel runs routed by a gray release, shared by the ingest and dashboard tests: one run per
user through `kernel.release.Release` (scripted models, so each run's steps are known), the
candidate optionally taking extra steps (a planted regression), some runs mirrored in shadow."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.release import Release
from tests.support.scripted_runs import act, add, final
from tracer.conventions import ReleaseCohort

USERS = [f"user-{i}" for i in range(360)]
SHARE = 0.3


@dataclass
class ReleaseRuns:
    cohorts: dict[str, ReleaseCohort] = field(default_factory=dict)  # live trace id -> cohort
    live: list[str] = field(default_factory=list)
    shadows: list[tuple[str | None, str | None]] = field(default_factory=list)  # (primary, shadow) trace ids


def _script(rng: random.Random, extra_steps: int) -> list[str]:
    tools = [act("add", a=i, b=1) for i in range(rng.randint(0, 2) + extra_steps)]
    return [*tools, final("done")]


async def run_release(name: str, agent: str, extra_candidate_steps: int, seed: int, shadow_every: int = 0,
                      users: list[str] = USERS) -> ReleaseRuns:
    """One run per user; a fresh Release per run (per-run scripted models: routing is the hash alone)."""
    rng = random.Random(seed)
    out = ReleaseRuns()
    for i, user in enumerate(users):
        stable = Agent(agent, "1", ScriptedLLM(_script(rng, 0)), [add])
        candidate = Agent(agent, "2", ScriptedLLM(_script(rng, extra_candidate_steps)), [add])
        mirror = Agent(agent, "2", ScriptedLLM(_script(rng, 0)), [add]) if shadow_every and i % shadow_every == 0 else None
        release = Release(name, stable, candidate, share=SHARE, shadow=mirror)
        result = await release.run("count", user_id=user)
        out.cohorts[result.trace_id] = release.route(user).cohort
        out.live.append(result.trace_id)
        for done in await release.drain(10):
            out.shadows.append((done.primary_trace_id, done.result.trace_id))
    return out
