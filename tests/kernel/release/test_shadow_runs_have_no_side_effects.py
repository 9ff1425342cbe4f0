"""A shadow run executes the same input as the live run but acts on nothing: a real side-effecting
tool (it writes a file) is recorded, not run, whatever policy the shadow agent was built with; no
hand-off hook is called; its answer is never what the user gets. The failure this covers: a shadow
of a new version that really refunds, emails or writes, or whose answer leaks to the user."""

from __future__ import annotations

from pathlib import Path

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.handoff import HandoffPolicy
from kernel.llm import ScriptedLLM
from kernel.policy import AllowAll
from kernel.release import Release
from kernel.tools import tool
from tests.support.scripted_runs import act, final
from tracer.conventions import ToolDecision


def _writer(path: Path):  # type: ignore[no-untyped-def]
    @tool(side_effect=True)
    async def write_note(text: str) -> str:
        """Write a note to the shared file."""
        with path.open("a") as f:
            f.write(text + "\n")
        return "written"

    return write_note


def _agent(version: str, path: Path, script: list[str], **kw: object) -> Agent:
    return Agent("notes", version, ScriptedLLM(script), [_writer(path)], policy=AllowAll(), **kw)  # type: ignore[arg-type]


async def test_the_shadow_records_the_write_and_the_file_only_holds_the_live_runs_write(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    stable = _agent("1", notes, [act("write_note", text="from live"), final("live answer")])
    shadow = _agent("2", notes, [act("write_note", text="from shadow"), final("shadow answer")] * 2)
    release = Release("notes-v2", stable, shadow, share=0.0, shadow=shadow)

    result = await release.run("take a note", user_id="u1")
    [mirror] = await release.drain(10)

    assert result.answer == "live answer"  # the user gets the live run's answer
    assert notes.read_text() == "from live\n"  # the shadow's write never happened
    assert mirror.result.answer == "shadow answer" and mirror.result.ok
    assert [c.name for c in mirror.blocked_calls] == ["write_note"]
    assert mirror.blocked_calls[0].arguments == {"text": "from shadow"}
    [obs] = mirror.result.steps[0].observations
    assert obs.decision == ToolDecision.SHADOWED
    # the agent object itself is untouched: run live, the same agent writes
    await shadow.run("take a note", user_id="u1")
    assert notes.read_text() == "from live\nfrom shadow\n"


async def test_a_shadow_run_that_ends_in_a_handoff_pages_nobody(tmp_path: Path) -> None:
    paged: list[str] = []
    policy = HandoffPolicy(hook=lambda handoff, result: paged.append(result.version))
    script = [act("write_note", text="a"), act("write_note", text="b")]
    stable = _agent("1", tmp_path / "n.txt", [final("ok")], handoff=policy)
    shadow = _agent("2", tmp_path / "n.txt", script, budget=Budget(max_steps=1), handoff=policy)
    release = Release("notes-v2", stable, shadow, shadow=shadow)
    await release.run("t", user_id="u1")
    [mirror] = await release.drain(10)
    assert mirror.result.stop_reason == "max_steps" and mirror.result.handoff is not None
    assert paged == []
    live = await shadow.run("t")  # the same ending live does page
    assert live.handoff is not None and paged == ["2"]


async def test_only_keys_within_the_shadow_share_are_mirrored(tmp_path: Path) -> None:
    agent = _agent("1", tmp_path / "n.txt", [final("ok")] * 1)
    release = Release("notes-v2", agent, _agent("2", tmp_path / "n.txt", [final("ok")]), shadow=agent,
                      shadow_share=0.3)
    mirrored = [k for k in (f"u{i}" for i in range(5000)) if release.mirrors(k)]
    assert abs(len(mirrored) / 5000 - 0.3) < 0.03
    assert not release.mirrors(None)
