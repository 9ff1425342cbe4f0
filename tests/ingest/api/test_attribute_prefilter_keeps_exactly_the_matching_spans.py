"""An attribute term is answered through a cheap pre-filter (the promoted tool_name column, or a LIKE
over the raw attributes text) before the exact JSON test: through a real server, values that defeat a
naive pre-filter (LIKE's own `%`, `_`, `\\`; quotes; non-ASCII and `/`; numbers and booleans sent as
the tool name; a number that is compared as a string; a list) still select exactly their spans, and a
look-alike (`_` as any character, `%` as any text) never does."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.ingest.api.content_runs import ContentRun, ToolCall, emit
from tests.ingest.api.harness import BACKENDS, start_server, stop_server
from tests.ingest.api.otlp_runs import T0, Emitter
from tracer import conventions as c

WINDOW = {"since": (T0 - timedelta(days=1)).isoformat(), "until": (T0 + timedelta(days=1)).isoformat()}
NOTE = "x.note.text"  # a custom dotted key: one flat key, not a path
TOOL = c.GEN_AI_TOOL_NAME

# label -> (tool name as sent, extra attributes of the tool span)
CALLS: dict[str, tuple[str, dict[str, object]]] = {
    "pct": ("refund_%", {NOTE: "50%_off"}),
    "under": ("refundXx", {NOTE: "50x-off"}),  # what `_` and `%` would match as wildcards
    "slash": ("re\\fund", {NOTE: "a\\b/c"}),
    "quote": ('say "hi"', {NOTE: 'q"uote'}),
    "uni": ("café/ü", {NOTE: "naïve π/2"}),
    "numstr": ("500", {NOTE: "500"}),  # a string that looks like a number
    "num": ("lookup", {TOOL: 7, NOTE: 500}),  # the tool name sent as a number, a number note
    "float": ("lookup", {NOTE: 500.0}),  # rendered back as 500.0
    "bool": ("lookup", {TOOL: True}),  # rendered back as true (normalization promotes "True")
    "list": ("lookup", {NOTE: ["a b", "c/d"]}),
}


@pytest.fixture(scope="module", params=BACKENDS)
def world(request, tmp_path_factory):
    server, stack, thread = start_server(tmp_path_factory.mktemp("prefilter"), [], 10.0, request.param)
    e = Emitter()
    ids: dict[str, str] = {}
    for i, (label, (tool, extra)) in enumerate(CALLS.items()):
        run = emit(e, ContentRun("billing", f"task {label}", start=T0 + timedelta(minutes=i),
                                 calls=[ToolCall(tool, {"i": i}, extra=extra)]))
        ids[run.span_ids[tool]] = label
    server.send(e.request())
    yield server, ids
    stop_server(server, stack, thread)


def _q(value: str) -> str:
    """A filter string literal (JSON string syntax)."""
    return json.dumps(value, ensure_ascii=False)


def eq(key: str, value: str) -> str:
    return f"attributes[{_q(key)}] = {_q(value)}"


def has(key: str, value: str) -> str:
    return f"attributes[{_q(key)}] contains {_q(value)}"


NOT_500 = {"pct", "under", "slash", "quote", "uni", "float", "list"}
CASES: list[tuple[str, set[str]]] = [
    (eq(TOOL, "refund_%"), {"pct"}),
    (eq(TOOL, "refund__"), set()),
    (eq(TOOL, "re\\fund"), {"slash"}),
    (eq(TOOL, 'say "hi"'), {"quote"}),
    (eq(TOOL, "café/ü"), {"uni"}),
    (eq(TOOL, "500"), {"numstr"}),
    (eq(TOOL, "7"), {"num"}),
    (eq(TOOL, "true"), {"bool"}),
    (f'attributes[{_q(TOOL)}] in ("7", "refund_%", "nothing")', {"num", "pct"}),
    (has(TOOL, "FUND"), {"pct", "under", "slash"}),
    (eq(NOTE, "50%_off"), {"pct"}),
    (has(NOTE, "%_"), {"pct"}),
    (eq(NOTE, "a\\b/c"), {"slash"}),
    (has(NOTE, '"u'), {"quote"}),
    (has(NOTE, "ÏVE π/"), {"uni"}),
    (eq(NOTE, "500"), {"numstr", "num"}),
    (eq(NOTE, "500.0"), {"float"}),
    (f"attributes[{_q(NOTE)}] = 500", {"numstr", "num", "float"}),
    (has(NOTE, "00.0"), {"float"}),
    (eq(NOTE, json.dumps(["a b", "c/d"], separators=(",", ":"))), {"list"}),
    (has(NOTE, 'b","c'), {"list"}),
    (f"attributes[{_q(NOTE)}] exists and not {eq(NOTE, '500')}", NOT_500),
    (f'attributes[{_q(NOTE)}] != "500"', NOT_500),
]


@pytest.mark.parametrize(("expression", "expected"), CASES, ids=[e for e, _ in CASES])
def test_attribute_filter_selects_exactly_its_spans(world, expression, expected):
    server, ids = world
    r = server.get("/api/spans", filter=expression, limit=500, **WINDOW)
    assert r.status_code == 200, (expression, r.text)
    got = {ids[s["span_id"]] for s in r.json()["spans"] if s["span_id"] in ids}
    assert got == expected, expression


def test_agent_name_attribute_selects_the_agents_run_spans(world):
    """`gen_ai.agent.name` is answered through the agent_name column: it still selects exactly the spans
    that carry the attribute (the run roots), not every span normalization names the agent on."""
    server, ids = world
    r = server.get("/api/spans", filter=eq(c.GEN_AI_AGENT_NAME, "billing"), limit=500, **WINDOW)
    assert r.status_code == 200, r.text
    spans = r.json()["spans"]
    assert len(spans) == len(CALLS)
    assert all(s["parent_span_id"] in (None, "") and s["attributes"][c.GEN_AI_AGENT_NAME] == "billing" for s in spans)
    r = server.get("/api/spans", filter=eq(c.GEN_AI_AGENT_NAME, "bill"), limit=500, **WINDOW)
    assert r.json()["spans"] == []
