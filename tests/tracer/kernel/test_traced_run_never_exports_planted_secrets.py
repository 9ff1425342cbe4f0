"""An API key and an e-mail address planted in a tool result (and echoed by the model, and in a
tool's exception message) never appear in any exported attribute, event or status of a kernel
run: the observation flows into step observations, tool results, the next chat's input messages
and the answer, and every one of those passes the redactor."""

from __future__ import annotations

from kernel.llm import ScriptedLLM
from kernel.tools import tool
from tests.tracer.kernel.kernel_runs import TOOLS, act, final
from tracer import conventions as c

API_KEY = "sk-proj-Zq8vN3kLm7Tr2Wx9Yb4Hc6Jd"
EMAIL = "alice.secret@example.org"


@tool
async def lookup_account(user: str) -> str:
    """Returns the account record (with secrets, as real APIs sometimes do)."""
    return f"user={user} owner_email={EMAIL} api key in use: {API_KEY} status=active"


@tool
async def leaky_fail(user: str) -> str:
    """Fails with the secrets in its error message."""
    raise PermissionError(f"key {API_KEY} of {EMAIL} was revoked")


def _everything_exported(span) -> str:
    parts = [span.name, repr(dict(span.attributes)), str(span.status.description)]
    for event in span.events:
        parts.append(event.name + repr(dict(event.attributes)))
    return "\n".join(parts)


async def test_planted_secrets_never_leave_in_any_attribute(memory_handle) -> None:
    from kernel.agent import Agent

    llm = ScriptedLLM([
        act("lookup_account", user="alice"),
        act("leaky_fail", user="alice"),
        final(f"The account of {EMAIL} uses {API_KEY}."),
    ])
    result = await Agent("tester", "1.0", llm, [*TOOLS, lookup_account, leaky_fail]).run("check alice")
    assert result.ok
    # the kernel itself saw the secrets (the model must); only the exported copy is clean
    assert API_KEY in result.steps[0].observations[0].content and EMAIL in result.answer

    finished = memory_handle.memory_exporter.get_finished_spans()
    assert len(finished) == 14
    for span in finished:
        text = _everything_exported(span)
        assert API_KEY not in text and EMAIL not in text, span.name
        assert "Zq8vN3kLm7" not in text and "alice.secret" not in text, span.name
    by_name = {s.name: s for s in finished}
    result_attr = by_name["execute_tool lookup_account"].attributes[c.GEN_AI_TOOL_CALL_RESULT]
    assert "[REDACTED:api_key]" in result_attr and "[REDACTED" in result_attr.split("owner_email=")[1]
    assert "[REDACTED:api_key]" in by_name["invoke_agent tester"].attributes[c.RUN_ANSWER]
    assert by_name["execute_tool leaky_fail"].attributes[c.ERROR_TYPE] == "exception"
