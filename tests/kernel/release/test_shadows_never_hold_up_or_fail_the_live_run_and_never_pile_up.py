"""A shadow runs beside live traffic, so it must cost the user nothing: the live answer comes back
while the shadow is still working, a shadow that crashes is logged and counted but never raised to
the caller, mirrors beyond `max_pending_shadows` are skipped (not queued), and a long-lived
release keeps only the newest `keep_shadows` finished shadows while counting every one. The
failures this covers: a slow candidate in shadow slowing every user down, a broken one turning
live requests into errors, and a process that holds every shadow's result until it runs out of
memory."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.release import Release
from kernel.tools import tool
from tests.support.scripted_runs import act, final


def _gated_tool(gate: asyncio.Event, done: list[str]):  # type: ignore[no-untyped-def]
    @tool
    async def look_up(q: str) -> str:
        """Look something up (read-only, so a shadow really runs it)."""
        await gate.wait()
        done.append(q)
        return f"found {q}"

    return look_up


def _one_lookup_then_answer(answer: str) -> Any:
    """A model that looks up once, then answers: decided from the conversation, so concurrent
    shadow runs of one agent each get the two replies in their own order."""

    def reply(messages: list[Any], tools: object) -> str:
        looked = any("found" in str(m.content) for m in messages[2:])
        return final(answer) if looked else act("look_up", q="x")

    return ScriptedLLM(policy=reply)


def _live(version: str, answer: str = "live answer") -> Agent:
    return Agent("desk", version, ScriptedLLM(policy=lambda messages, tools: final(answer)))


async def test_the_live_answer_returns_while_its_shadow_still_works() -> None:
    gate, done = asyncio.Event(), []
    shadow = Agent("desk", "2", _one_lookup_then_answer("shadow answer"), [_gated_tool(gate, done)])
    release = Release("desk-2", _live("1"), _live("2"), shadow=shadow)

    result = await asyncio.wait_for(release.run("help", user_id="u1"), timeout=10)
    assert result.answer == "live answer"
    await asyncio.sleep(0.05)  # the shadow has started and waits on its tool
    assert done == [] and release.shadows_finished == 0

    gate.set()
    [mirror] = await release.drain(10)
    assert done == ["x"] and mirror.result.answer == "shadow answer"
    assert release.shadows_finished == 1 and release.shadows_failed == 0


async def test_mirrors_beyond_the_pending_limit_are_skipped_and_live_runs_all_answer() -> None:
    gate, done = asyncio.Event(), []
    shadow = Agent("desk", "2", _one_lookup_then_answer("shadow answer"), [_gated_tool(gate, done)])
    release = Release("desk-2", _live("1"), _live("2"), shadow=shadow, max_pending_shadows=2)

    answers = [(await release.run("help", user_id=f"u{i}")).answer for i in range(5)]
    assert answers == ["live answer"] * 5
    assert release.shadows_skipped == 3  # two wait on the gate; the other three were never started

    gate.set()
    finished = await release.drain(10)
    assert len(finished) == 2 and done == ["x", "x"]
    assert release.shadows_finished == 2


class _BrokenShadow:
    """A shadow implementation with a bug: its run raises instead of returning a result."""

    name, version = "desk", "3"

    async def run(self, task: str, **kwargs: object) -> object:
        raise RuntimeError("candidate bug")


async def test_a_shadow_that_raises_is_counted_and_logged_never_raised_to_the_caller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = Release("desk-2", _live("1"), _live("2"), shadow=_BrokenShadow())
    with caplog.at_level(logging.WARNING, logger="kernel.release"):
        result = await release.run("help", user_id="u1")
        finished = await release.drain(10)
    assert result.answer == "live answer" and result.ok
    assert finished == [] and release.shadows_failed == 1 and release.shadows_finished == 0
    assert "the shadow run failed" in caplog.text and "candidate bug" in caplog.text


async def test_only_the_newest_finished_shadows_are_kept_and_every_one_is_counted() -> None:
    replies = iter(f"shadow {i}" for i in range(7))
    shadow = Agent("desk", "2", ScriptedLLM(policy=lambda messages, tools: final(next(replies))))
    release = Release("desk-2", _live("1"), _live("2"), shadow=shadow, keep_shadows=3)
    for i in range(7):
        await release.run("help", user_id=f"u{i}")
        await release.drain(10)
    assert [s.result.answer for s in release.shadows] == ["shadow 4", "shadow 5", "shadow 6"]
    assert release.shadows_finished == 7


def test_a_negative_keep_shadows_is_refused_with_what_to_give() -> None:
    with pytest.raises(ValueError, match="keep_shadows must be >= 0"):
        Release("desk-2", _live("1"), _live("2"), keep_shadows=-1)
