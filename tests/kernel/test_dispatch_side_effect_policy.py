"""Side-effect tools go through the policy; read-only tools never do; a broken policy fails
closed."""

from __future__ import annotations

import json

from kernel.dispatch import NOT_EXECUTED_PREFIX, dispatch
from kernel.policy import AllowAll, AllowList, ConfirmCallback, DenyAll, PolicyDecision, Shadow
from kernel.tools import Tool, ToolRegistry, tool
from kernel.types import ToolCall
from tracer.conventions import RiskLevel, ToolDecision, ToolErrorCode

executed: list[str] = []


@tool(side_effect=True, risk=RiskLevel.HIGH, price_usd=0.25)
async def delete_file(path: str) -> str:
    """Delete a file."""
    executed.append(path)
    return f"deleted {path}"


@tool
async def read_file(path: str) -> str:
    """Read a file."""
    executed.append("read " + path)
    return "contents"


REG = ToolRegistry([delete_file, read_file])
DELETE = ToolCall(id="d1", name="delete_file", arguments={"path": "/tmp/x"})


async def test_deny_all_blocks_side_effects_but_not_reads() -> None:
    executed.clear()
    obs = await dispatch(REG, DELETE, DenyAll())
    assert obs.is_error and obs.error is not None and obs.error.error == ToolErrorCode.DENIED
    assert obs.decision == ToolDecision.DENIED and obs.cost_usd == 0
    assert "delete_file" in obs.error.message
    read = await dispatch(REG, ToolCall(id="r1", name="read_file", arguments={"path": "a"}), DenyAll())
    assert not read.is_error and read.decision == ToolDecision.EXECUTED
    assert executed == ["read a"]


async def test_no_policy_means_allow_all() -> None:
    executed.clear()
    obs = await dispatch(REG, DELETE)
    assert not obs.is_error and obs.decision == ToolDecision.EXECUTED and obs.cost_usd == 0.25
    assert (await dispatch(REG, DELETE, AllowAll())).content == "deleted /tmp/x"
    assert executed == ["/tmp/x", "/tmp/x"]


async def test_allow_list() -> None:
    executed.clear()
    denied = await dispatch(REG, DELETE, AllowList(["send_mail"]))
    assert denied.error is not None and denied.error.error == ToolErrorCode.DENIED
    assert "allow list" in denied.error.message
    allowed = await dispatch(REG, DELETE, AllowList(["delete_file"]))
    assert not allowed.is_error
    assert executed == ["/tmp/x"]


async def test_shadow_records_and_does_not_execute() -> None:
    executed.clear()
    shadow = Shadow()
    obs = await dispatch(REG, DELETE, shadow)
    assert executed == []
    assert shadow.calls == [DELETE]
    assert obs.decision == ToolDecision.SHADOWED and not obs.is_error and obs.cost_usd == 0
    assert obs.content.startswith(NOT_EXECUTED_PREFIX)
    body = json.loads(obs.content[len(NOT_EXECUTED_PREFIX) :])
    assert body["decision"] == "shadowed" and "NOT executed" in body["message"]


async def test_confirm_callback_true_and_false() -> None:
    seen: list[tuple[str, dict]] = []

    def make(answer: bool) -> ConfirmCallback:
        async def confirm(t: Tool, call: ToolCall) -> bool:
            seen.append((t.name, call.arguments))
            return answer

        return ConfirmCallback(confirm)

    executed.clear()
    yes = await dispatch(REG, DELETE, make(True))
    no = await dispatch(REG, DELETE, make(False))
    assert not yes.is_error and yes.content == "deleted /tmp/x"
    assert (
        no.error is not None
        and no.error.error == ToolErrorCode.DENIED
        and "not confirmed" in no.error.message
    )
    assert executed == ["/tmp/x"]
    assert seen == [("delete_file", {"path": "/tmp/x"})] * 2


async def test_confirm_callback_not_asked_for_invalid_arguments() -> None:
    asked: list[ToolCall] = []

    async def confirm(t: Tool, call: ToolCall) -> bool:
        asked.append(call)
        return True

    obs = await dispatch(REG, ToolCall(id="x", name="delete_file", arguments={}), ConfirmCallback(confirm))
    assert obs.error is not None and obs.error.error == ToolErrorCode.INVALID_ARGUMENTS
    assert asked == []


async def test_policy_that_raises_or_misbehaves_fails_closed() -> None:
    class Broken:
        async def decide(self, t: Tool, call: ToolCall) -> PolicyDecision:
            raise ConnectionError("approval service down")

    class Wrong:
        async def decide(self, t: Tool, call: ToolCall) -> str:
            return "yes"

    executed.clear()
    for policy in (Broken(), Wrong()):
        obs = await dispatch(REG, DELETE, policy)  # type: ignore[arg-type]
        assert obs.error is not None and obs.error.error == ToolErrorCode.DENIED
        assert obs.decision == ToolDecision.DENIED
    assert "ConnectionError" in (await dispatch(REG, DELETE, Broken())).content  # type: ignore[arg-type]
    assert executed == []


async def test_pending_approval_is_not_executed() -> None:
    class Later:
        async def decide(self, t: Tool, call: ToolCall) -> PolicyDecision:
            return PolicyDecision(ToolDecision.PENDING_APPROVAL, "waiting for on-call")

    executed.clear()
    obs = await dispatch(REG, DELETE, Later())
    assert obs.decision == ToolDecision.PENDING_APPROVAL and not obs.is_error
    assert "waiting for on-call" in obs.content and executed == []


async def test_policy_returning_plain_string_decision_is_normalised() -> None:
    class Loose:
        async def decide(self, t: Tool, call: ToolCall) -> PolicyDecision:
            return PolicyDecision("shadowed")  # type: ignore[arg-type]

    executed.clear()
    obs = await dispatch(REG, DELETE, Loose())
    assert obs.decision == ToolDecision.SHADOWED and executed == []
