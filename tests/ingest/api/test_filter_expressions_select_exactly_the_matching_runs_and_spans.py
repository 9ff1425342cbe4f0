"""Every operator of the filter expression on /api/runs and /api/spans selects exactly the runs and spans
it means, checked against what was sent through a real server: numbers compare as numbers (600 > 500 and
"1000" > 500 even though "1000" < "500" as text), a run matches when ONE span of its trace matches a group
of span terms, `not` is taken at run level, and every existing /api/runs parameter still applies."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.ingest.api.content_runs import ContentRun, ToolCall, emit
from tests.ingest.api.harness import BACKENDS, start_server, stop_server
from tests.ingest.api.otlp_runs import T0, Emitter

WINDOW = {"since": (T0 - timedelta(days=1)).isoformat(), "until": (T0 + timedelta(days=1)).isoformat()}
AMOUNT = "refund.amount"  # a custom attribute of the refund calls (not a promoted column)


@pytest.fixture(scope="module", params=BACKENDS)
def world(request, tmp_path_factory):
    server, stack, thread = start_server(tmp_path_factory.mktemp("filterexpr"), [], 10.0, request.param)
    e = Emitter()
    runs = {
        # refund over 500 (a number)
        "big": ContentRun("billing", "refund order 1", calls=[ToolCall("refund", {"order": 1}, extra={AMOUNT: 600})]),
        # refund of 1000 sent as a string: still a number to `>`
        "str": ContentRun("billing", "refund order 2", start=T0 + timedelta(minutes=1),
                          calls=[ToolCall("refund", {"order": 2}, extra={AMOUNT: "1000"})]),
        # a small refund, and a big lookup: no ONE span is a refund over 500
        "split": ContentRun("billing", "refund order 3", start=T0 + timedelta(minutes=2),
                            calls=[ToolCall("refund", {"order": 3}, extra={AMOUNT: 20}),
                                   ToolCall("lookup", {"q": "x"}, extra={AMOUNT: 900})]),
        # a failed lookup, another agent
        "fail": ContentRun("support", "find the parcel", start=T0 + timedelta(minutes=3), ok=False,
                           calls=[ToolCall("lookup", {"q": "parcel"}, error="carrier API timed out")]),
        # no tool call at all
        "none": ContentRun("support", "say hello", start=T0 + timedelta(minutes=4)),
    }  # fmt: skip
    for run in runs.values():
        emit(e, run)
    server.send(e.request())
    yield server, runs
    stop_server(server, stack, thread)


def _runs(server, expression: str, **params) -> set[str]:
    r = server.get("/api/runs", filter=expression, **{**WINDOW, **params})
    assert r.status_code == 200, (expression, r.text)
    return {row["trace_id"] for row in r.json()["runs"]}


def _spans(server, expression: str) -> list[dict]:
    r = server.get("/api/spans", filter=expression, limit=500, **WINDOW)
    assert r.status_code == 200, (expression, r.text)
    return r.json()["spans"]


CASES = {
    f'attributes["{AMOUNT}"] > 500': ("big", "str", "split"),  # the lookup's 900 counts: any span
    f'attributes["{AMOUNT}"] >= 600': ("big", "str", "split"),
    f'attributes["{AMOUNT}"] < 600': ("split",),
    f'attributes["{AMOUNT}"] <= 600': ("big", "split"),
    f'attributes["{AMOUNT}"] = 600': ("big",),
    f'attributes["{AMOUNT}"] = "1000"': ("str",),  # a string literal compares as text
    f'attributes["{AMOUNT}"] != 600': ("str", "split"),
    f'attributes["gen_ai.tool.name"] = "refund" and attributes["{AMOUNT}"] > 500': ("big", "str"),  # one span
    f'tool_name = "refund" and attributes["{AMOUNT}"] > 500': ("big", "str"),
    f'attributes["{AMOUNT}"] exists': ("big", "str", "split"),
    'attributes["no.such.key"] exists': (),
    'attributes["gen_ai.tool.call.arguments"] contains "PARCEL"': ("fail",),  # case-insensitive
    'tool_name in ("refund", "nothing")': ("big", "str", "split"),
    'agent in ("support")': ("fail", "none"),
    'agent = "billing" and not tool_name = "lookup"': ("big", "str"),  # no span of the trace is a lookup
    'not tool_name exists': ("none",),
    '(agent = "support" or steps >= 2) and ok = true': ("split", "none"),
    'ok = false': ("fail",),
    'status = "ERROR" and error_type = "exception"': ("fail",),
    'span.name contains "execute_tool"': ("big", "str", "split", "fail"),
    'steps > 1': ("split",),
    'AGENT = "support" AND NOT ok = false': ("none",),  # keywords and names in any case
}


@pytest.mark.parametrize("expression", CASES)
def test_runs_filter(world, expression):
    server, runs = world
    assert _runs(server, expression) == {runs[n].trace_id for n in CASES[expression]}


def test_existing_runs_parameters_still_apply_with_a_filter(world):
    server, runs = world
    assert _runs(server, 'tool_name = "refund"', agent="billing", ok="true") == {
        runs[n].trace_id for n in ("big", "str", "split")
    }
    assert _runs(server, 'tool_name = "refund"', agent="support") == set()
    assert _runs(server, 'tool_name = "refund"', since=(T0 + timedelta(seconds=30)).isoformat()) == {
        runs[n].trace_id for n in ("str", "split")
    }
    r = server.get("/api/runs", filter='tool_name = "refund"', limit=2, sort="start_time", order="asc", **WINDOW)
    first = r.json()
    assert [x["trace_id"] for x in first["runs"]] == [runs["big"].trace_id, runs["str"].trace_id]
    rest = server.get("/api/runs", filter='tool_name = "refund"', limit=2, sort="start_time", order="asc",
                      cursor=first["next"], **WINDOW).json()
    assert [x["trace_id"] for x in rest["runs"]] == [runs["split"].trace_id] and rest["next"] is None


def test_spans_filter_returns_the_matching_spans_with_their_attributes(world):
    server, runs = world
    got = _spans(server, f'attributes["{AMOUNT}"] > 500')
    assert {(s["trace_id"], s["tool_name"]) for s in got} == {
        (runs["big"].trace_id, "refund"), (runs["str"].trace_id, "refund"), (runs["split"].trace_id, "lookup"),
    }
    assert {s["attributes"][AMOUNT] for s in got} == {600, "1000", 900}
    failed = _spans(server, 'status = "ERROR"')
    assert [(s["trace_id"], s["span_id"]) for s in failed] == [(runs["fail"].trace_id, runs["fail"].span_ids["lookup"])]
    assert _spans(server, 'duration_ms > 1000000') == []


def test_spans_pages_newest_first_never_skip_or_repeat(world):
    server, runs = world
    every = _spans(server, 'operation in ("tool", "step", "agent")')
    assert len(every) == 5 + 2 * 5  # 5 runs, 5 tool calls, each with its step
    seen, cursor = [], None
    while True:
        r = server.get("/api/spans", filter='operation in ("tool", "step", "agent")', limit=4, cursor=cursor, **WINDOW)
        assert r.status_code == 200, r.text
        page = r.json()
        seen += [(s["trace_id"], s["span_id"]) for s in page["spans"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == [(s["trace_id"], s["span_id"]) for s in every]
    assert [s["start_time"] for s in every] == sorted((s["start_time"] for s in every), reverse=True)
    assert server.get("/api/spans", cursor="not-a-cursor").status_code == 400
    assert server.get("/api/spans", limit=501).status_code == 422
