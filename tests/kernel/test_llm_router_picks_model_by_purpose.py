"""The router must send each call to the model its rules pick, and degrade to the default."""

from __future__ import annotations

import logging

import pytest

from kernel.llm import LLM, Router, ScriptedLLM
from kernel.types import Message


def _three() -> tuple[ScriptedLLM, ScriptedLLM, ScriptedLLM]:
    return (
        ScriptedLLM(policy=lambda m, t: "from default", model="big"),
        ScriptedLLM(policy=lambda m, t: "from cheap", model="small"),
        ScriptedLLM(policy=lambda m, t: "from planner", model="planner"),
    )


async def test_first_matching_rule_wins_else_default() -> None:
    default, cheap, planner = _three()
    router = Router(
        default,
        rules=[
            (lambda purpose, msgs: purpose == "summary", cheap),
            (lambda purpose, msgs: purpose in ("plan", "summary"), planner),
            (lambda purpose, msgs: len(msgs) > 3, cheap),
        ],
    )
    assert isinstance(router, LLM)
    assert router.model == "big"
    one = [Message(role="user", content="q")]
    assert (await router.complete(one)).text == "from default"  # purpose defaults to "step"
    assert (await router.complete(one, purpose="summary")).text == "from cheap"
    assert (await router.complete(one, purpose="plan")).text == "from planner"
    assert (await router.complete(one * 4, purpose="step")).text == "from cheap"
    assert len(default.calls) == 1 and len(cheap.calls) == 2 and len(planner.calls) == 1


async def test_arguments_are_forwarded() -> None:
    default, _, _ = _three()
    router = Router(default)
    await router.complete([Message(role="user", content="q")], [{"x": 1}], temperature=0.3, max_tokens=9)
    call = default.calls[0]
    assert call.tools == [{"x": 1}] and call.temperature == 0.3 and call.max_tokens == 9


async def test_a_raising_rule_is_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    default, cheap, _ = _three()

    def broken(purpose: str, msgs: list[Message]) -> bool:
        raise KeyError("oops")

    router = Router(default, rules=[(broken, cheap)])
    with caplog.at_level(logging.ERROR, logger="kernel.llm.router"):
        resp = await router.complete([Message(role="user", content="q")], purpose="summary")
    assert resp.text == "from default"
    assert "router rule 0 raised" in caplog.text
