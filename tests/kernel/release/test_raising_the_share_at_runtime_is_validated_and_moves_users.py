"""A gray release is widened while the process serves traffic (`release.share = 0.5`). The
failure this covers: an assignment bypassed the constructor's check, so a typo (50 for 0.5) sent
every user to the candidate. A bad value is refused with what to give and the share in force
stays; a good one moves users from stable to candidate on their next run, never back."""

from __future__ import annotations

import pytest

from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.release import Release
from tests.support.scripted_runs import final

USERS = [f"user-{i}" for i in range(400)]


def _agent(version: str) -> Agent:
    return Agent("desk", version, ScriptedLLM(policy=lambda messages, tools: final(f"from {version}")))


async def test_raising_the_share_moves_users_on_their_next_run_and_a_typo_is_refused() -> None:
    release = Release("desk-2", _agent("1"), _agent("2"), share=0.1)
    before = {u: (await release.run("t", user_id=u)).version for u in USERS}

    with pytest.raises(ValueError, match="share must be between 0 and 1"):
        release.share = 50  # meant 0.5
    assert release.share == 0.1
    assert {u: (await release.run("t", user_id=u)).version for u in USERS} == before

    release.share = 0.5
    after = {u: (await release.run("t", user_id=u)).version for u in USERS}
    moved = {u for u in USERS if before[u] != after[u]}
    assert all(before[u] == "1" and after[u] == "2" for u in moved)
    assert 0.3 < sum(v == "2" for v in after.values()) / len(USERS) < 0.7
    assert len(moved) > 0.2 * len(USERS)


def test_a_bad_shadow_share_assignment_is_refused_too() -> None:
    release = Release("desk-2", _agent("1"), _agent("2"), shadow=_agent("2"), shadow_share=0.2)
    with pytest.raises(ValueError, match="shadow_share must be between 0 and 1"):
        release.shadow_share = -1
    assert release.shadow_share == 0.2
