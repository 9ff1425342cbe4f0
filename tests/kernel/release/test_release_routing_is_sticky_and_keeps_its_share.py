"""A gray release routes each key to the same side every time, sends the configured share of keys
to the candidate, and raising the share only moves keys from stable to candidate. The failure this
covers: a random or per-process routing that flips users between versions mid-conversation, or a
share change that sends candidate users back to stable."""

from __future__ import annotations

import pytest

from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.release import Release, bucket
from tracer.conventions import ReleaseCohort

KEYS = [f"user-{i}" for i in range(20_000)]


def _agent(version: str, name: str = "desk") -> Agent:
    return Agent(name, version, ScriptedLLM(["Final Answer: x"]))


def _release(share: float, name: str = "desk-v3", **kw: object) -> Release:
    return Release(name, _agent("2"), _agent("3"), share=share, **kw)  # type: ignore[arg-type]


def _candidates(release: Release) -> set[str]:
    return {k for k in KEYS if release.route(k).cohort == ReleaseCohort.CANDIDATE}


def test_the_share_of_keys_on_the_candidate_is_the_configured_share() -> None:
    for share in (0.05, 0.2, 0.5, 0.9):
        got = len(_candidates(_release(share))) / len(KEYS)
        # binomial sd at 20,000 keys is at most 0.0035: 4 sd
        assert abs(got - share) < 0.014, (share, got)
    assert _candidates(_release(0.0)) == set()
    assert _candidates(_release(1.0)) == set(KEYS)


def test_the_same_key_lands_on_the_same_side_in_every_release_object() -> None:
    first, again = _release(0.2), _release(0.2)
    assert [first.route(k).cohort for k in KEYS] == [again.route(k).cohort for k in KEYS]
    # the bucket is a fixed function of (release, key), not of the process (no hash() salt): pinned
    assert bucket("desk-v3", "user-1") == 0.5504370786436961
    assert min(bucket("desk-v3", k) for k in KEYS) >= 0.0 and max(bucket("desk-v3", k) for k in KEYS) < 1.0


def test_raising_the_share_only_moves_keys_from_stable_to_candidate() -> None:
    at_20, at_50 = _candidates(_release(0.2)), _candidates(_release(0.5))
    assert at_20 < at_50  # a strict superset: nobody went back to stable
    assert len(at_50 - at_20) > 0.25 * len(KEYS)


def test_two_releases_draw_independent_cohorts() -> None:
    a, b = _candidates(_release(0.2, "desk-v3")), _candidates(_release(0.2, "desk-v4"))
    overlap = len(a & b) / len(KEYS)
    assert abs(overlap - 0.04) < 0.008  # 0.2 x 0.2: not the same fifth of users every time


def test_overrides_and_an_explicit_cohort_win_and_a_run_without_a_key_is_stable() -> None:
    release = _release(0.0, overrides={"tester": "candidate"})
    assert release.route("tester").cohort == ReleaseCohort.CANDIDATE
    assert release.route("tester").reason == "override"
    assert release.route("someone").cohort == ReleaseCohort.STABLE
    assert release.route("someone", cohort="candidate").cohort == ReleaseCohort.CANDIDATE
    assert release.route(None) == release.route(None)
    assert release.route(None).reason == "no_key" and release.route(None).cohort == ReleaseCohort.STABLE
    full = _release(1.0, overrides={"vip": ReleaseCohort.STABLE})
    assert full.route("vip").cohort == ReleaseCohort.STABLE


def test_sticky_by_conversation_keys_on_the_conversation_and_falls_back_to_the_user() -> None:
    release = _release(0.5, sticky_by="conversation")
    assert release.key_of("u1", "c1") == "c1"
    assert release.key_of("u1", None) == "u1"
    assert _release(0.5).key_of("u1", "c1") == "u1"
    assert release.key_of(None, None) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"share": 1.5}, "share must be between 0 and 1"),
        ({"share": -0.1}, "share must be between 0 and 1"),
        ({"overrides": {"x": "blue"}}, "unknown cohort 'blue'"),
        ({"overrides": {"x": "shadow"}}, "shadow runs mirror"),
        ({"sticky_by": "account"}, "sticky_by must be"),
    ],
)
def test_bad_settings_are_refused_with_what_to_give(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _release(**{"share": 0.2, **kwargs})  # type: ignore[arg-type]


def test_stable_and_candidate_must_be_two_versions_of_one_agent() -> None:
    with pytest.raises(ValueError, match="versions of one agent"):
        Release("r", _agent("2"), _agent("3", name="other"))
    with pytest.raises(ValueError, match="both version '2'"):
        Release("r", _agent("2"), _agent("2"))
