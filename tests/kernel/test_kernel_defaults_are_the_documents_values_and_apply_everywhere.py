"""The kernel's defaults are the documents' values (a 30 s tool timeout, a 60/40 head/tail
truncation, a system prompt with the three-part thought and the evidence rule), named once in
`kernel.defaults` and applied by every user of them: what a real run sends the model, the tools
`@tool`, `Tool` and MCP build, and the README's "Defaults and why" table, whose snippet is run."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys

from kernel import Agent, ScriptedLLM, tool
from kernel import defaults as d
from kernel.mcp import MCPToolSource
from kernel.parsing import EXPECTED_FORMAT
from kernel.tokens import estimate_tokens
from kernel.tools import Tool
from tests.support.readme import ROOT, python_blocks

SECTION = "Defaults and why"


@tool
async def export_rows() -> str:
    """Every row of the export."""
    return "\n".join(f"row {i:04d} " + "value " * 6 for i in range(600))


def test_a_run_sends_the_three_part_thought_and_evidence_prompt_and_cuts_60_40() -> None:
    llm = ScriptedLLM(["Action: export_rows\nAction Input: {}", "Final Answer: 600 rows"])
    result = Agent("exporter", "1", llm, [export_rows]).run_sync("How many rows?")

    assert result.ok, result.error
    system = llm.calls[0].messages[0].content
    assert system.startswith(d.SYSTEM_PROMPT)
    for rule in ("what I know", "what I need", "next action", "cite", "never guess"):
        assert rule in d.SYSTEM_PROMPT, rule
    assert "what you know; what you still need; your next action" in EXPECTED_FORMAT and EXPECTED_FORMAT in system
    shown = llm.calls[1].messages[-1].content
    head, tail = re.split(r"\[\.\.\. \d+ tokens truncated \.\.\.\]", shown)
    kept_head, kept_tail = estimate_tokens(head), estimate_tokens(tail)
    assert kept_head + kept_tail <= d.OBSERVATION_MAX_TOKENS
    assert abs(kept_head / (kept_head + kept_tail) - d.TRUNCATION_HEAD_SHARE) < 0.06, (kept_head, kept_tail)
    assert "row 0000" in head and "row 0599" in tail


def test_every_tool_source_times_calls_out_after_the_documents_30_seconds() -> None:
    assert d.TOOL_TIMEOUT_S == 30.0
    assert export_rows.timeout_s == d.TOOL_TIMEOUT_S
    assert {f.name: f.default for f in dataclasses.fields(Tool)}["timeout_s"] == d.TOOL_TIMEOUT_S
    assert MCPToolSource.stdio(sys.executable, ["-c", "pass"]).timeout_s == d.TOOL_TIMEOUT_S


def _table() -> dict[str, str]:
    body = (ROOT / "README.md").read_text(encoding="utf-8").split(f"## {SECTION}\n", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| `(\w+)` \| ([^|]+) \|", body, re.MULTILINE)}


def test_the_readme_table_states_the_values_in_kernel_defaults_and_its_snippet_runs() -> None:
    table = _table()
    assert set(table) == {"TOOL_TIMEOUT_S", "TRUNCATION_HEAD_SHARE", "SYSTEM_PROMPT", "OBSERVATION_MAX_TOKENS"}
    assert table["TOOL_TIMEOUT_S"] == f"{d.TOOL_TIMEOUT_S:g} s"
    assert float(table["TRUNCATION_HEAD_SHARE"]) == d.TRUNCATION_HEAD_SHARE
    assert int(table["OBSERVATION_MAX_TOKENS"]) == d.OBSERVATION_MAX_TOKENS
    [snippet] = python_blocks(SECTION)
    out = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True"]
