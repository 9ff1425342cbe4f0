"""The bodies captured from real frameworks (tests/fixtures/frameworks/*) normalize to the span-level
facts their manifests give: per run, the tokens on model-call spans add up to the run's tokens
(agent/step aggregates never count), the LLM and tool spans are the run's calls, the request models
are the run's models, and an agent or workflow span names the run's agent.

What only the trace shows is left to run derivation (ingest/store, tests/ingest/frameworks) and
listed here per fixture: wrapper LLM spans with the real call under them (LlamaIndex's outer
`astream_chat`, pydantic-ai's `chat` around Logfire's OpenAI span, which repeats its usage).
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ingest.normalize import spans_table
from ingest.otlp.decode import decode_body

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "frameworks"
MANIFESTS = sorted(FIXTURES.glob("*/manifest.json")) if FIXTURES.is_dir() else []
# (fixture, fact) pairs that are trace-level, with why (see the module docstring).
TRACE_LEVEL = {
    ("llama_index_openinference", "llm_calls"): "outer astream_chat wraps the inner call",
    ("logfire_pydantic_ai", "llm_calls"): "pydantic-ai chat wraps Logfire's OpenAI span",
    ("logfire_pydantic_ai", "tokens"): "the wrapper repeats the inner span's usage",
}


def _rows(directory: Path, manifest: dict) -> dict[str, list[dict]]:
    by_trace: dict[str, list[dict]] = defaultdict(list)
    for body in manifest["bodies"]:
        if body["signal"] != "traces":
            continue
        raw = (directory / body["file"]).read_bytes()
        decoded = decode_body(raw, body["content_type"], body["content_encoding"], 1 << 28)
        for row in spans_table("p", decoded.request, datetime.now(UTC)).to_pylist():
            by_trace[row["trace_id"]].append(row)
    return by_trace


@pytest.mark.parametrize("manifest_path", MANIFESTS, ids=[p.parent.name for p in MANIFESTS])
def test_fixture_runs_have_their_span_facts(manifest_path: Path) -> None:
    directory = manifest_path.parent
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    by_trace = _rows(directory, manifest)
    checked = defaultdict(int)
    for run in manifest["runs"]:
        spans = by_trace[run["trace_id"]]
        assert spans, f"{directory.name}: no spans for run {run['trace_id']}"
        where = f"{directory.name} {run['scenario']} {run['trace_id']}"
        llm = [s for s in spans if s["operation"] == "llm"]
        facts = {
            "tokens": (
                (sum(s["input_tokens"] or 0 for s in spans), sum(s["output_tokens"] or 0 for s in spans)),
                (run["input_tokens"], run["output_tokens"]),
            ),
            "llm_calls": (len(llm), run["llm_calls"]),
            "tool_calls": (sum(s["operation"] == "tool" for s in spans), run["tool_calls"]),
            "models": (sorted({s["model"] for s in llm if s["model"]}), sorted(run["models"])),
        }
        if run["agent"] is not None:
            names = {s["agent_name"] for s in spans if s["operation"] in ("agent", "workflow")}
            facts["agent"] = (run["agent"] in names, True)
        for fact, (got, expected) in facts.items():
            if (directory.name, fact) in TRACE_LEVEL:
                continue
            assert got == expected, f"{where}: {fact}"
            checked[fact] += 1
    assert checked["models"] == len(manifest["runs"])  # every run was looked at
    # no token or cost column on an agent or workflow span, whatever the framework put there
    for spans in by_trace.values():
        for s in spans:
            if s["operation"] in ("agent", "workflow"):
                assert (s["input_tokens"], s["output_tokens"], s["cost_usd"]) == (None, None, None), s["name"]


def test_the_fixtures_are_there() -> None:
    """The parametrized test above must not pass by having nothing to check."""
    assert len(MANIFESTS) >= 15


def test_langfuse_fixture_versions_sessions_errors_and_client_cost() -> None:
    """The real Langfuse SDK's bodies: no gen_ai.* at all, everything from langfuse.* attributes."""
    directory = FIXTURES / "langfuse_sdk"
    if not directory.is_dir():
        pytest.skip("langfuse_sdk fixture absent")
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    by_trace = _rows(directory, manifest)
    for run in manifest["runs"]:
        spans = by_trace[run["trace_id"]]
        (agent,) = [s for s in spans if s["operation"] == "agent"]
        assert (agent["agent_name"], agent["agent_version"]) == (run["agent"], run["version"])
        assert all(s["environment"] == "capture" and s["conversation_id"] for s in spans)
        llm = [s for s in spans if s["operation"] == "llm"]
        if run["scenario"] == "llm_error":
            (failed,) = llm
            assert failed["status"] == "ERROR" and failed["status_message"]
            assert (failed["cost_usd"], failed["cost_source"]) == (0.0, "client")  # what Langfuse reported
        else:
            assert all(s["cost_source"] == "price_table" and s["cost_usd"] > 0 for s in llm)
