"""The Sessions page lists a real server's conversations and reads one as a transcript with per-turn
trace links; the Agent graph page draws the runs' agents and tools with an edge table linking example
traces; the Trace page has the run's graph; a saved view's link (`?view=<id>`) restores its filters.

Run by Streamlit's AppTest against the real ingest server (OTLP in, query API out).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest

from tests.dashboards.conftest import open_page, send_otlp, texts
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec, ns
from tracer import conventions as c

ALL = {"since": "all"}

# the pages only call the API: each runs against a server on either store
pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def _told(emitter: Emitter, i: int) -> None:
    start = T0 + timedelta(minutes=10 + i)
    root = emitter.tracer.start_span(
        c.SPAN_RUN.format(agent="support_agent"), start_time=ns(start),
        attributes={c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: "support_agent",
                    c.RUN_OK: True, c.RUN_STOP_REASON: "finish", c.RUN_STEPS: 1, c.RUN_MODE: "live",
                    c.GEN_AI_CONVERSATION_ID: "conv-told", c.ENDUSER_ID: "u-told",
                    c.RUN_TASK: f"**question {i}** [x](http://evil)", c.RUN_ANSWER: f"answer {i}"},
    )  # fmt: skip
    root.end(end_time=ns(start + timedelta(seconds=1)))


def _links(at: Any) -> list[tuple[str, str]]:
    return [(el.proto.page.rsplit("/", 1)[-1].removesuffix(".py"), el.proto.query_string) for el in at.get("page_link")]


def _load(start_ingest_server: Any, backend: str) -> tuple[Any, list[RunSpec]]:
    srv = start_ingest_server(grpc_port=0, store=backend)
    emitter = Emitter()
    runs = [emitter.run(RunSpec(start=T0 + timedelta(minutes=i), conversation="conv-1", user="u1", failing_tools=i))
            for i in range(2)]  # fmt: skip
    for i in range(2):
        _told(emitter, i)
    send_otlp(srv.http_url, emitter.request())
    assert srv.store.wait_loaded(30)
    return srv, runs


def test_sessions_page_lists_and_reads_a_conversation(start_ingest_server: Any, ui_env: Any, backend: str) -> None:
    srv, runs = _load(start_ingest_server, backend)
    ui_env(srv.http_url)
    at = open_page("sessions", ALL)
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["session"]) == ["conv-told", "conv-1"] and list(table["turns"]) == [2, 2]

    at = open_page("sessions", {**ALL, "session": "conv-1"})
    assert not at.exception
    shown = texts(at)
    assert "Session conv-1" in shown and "Turns=2" in shown and "Failed turns=0" in shown
    turns = at.dataframe[0].value
    assert list(turns["trace"]) == [f"trace?trace_id={r.trace_id}" for r in runs]
    assert list(turns["tokens in"]) == [r.input_tokens for r in runs]

    at = open_page("sessions", {**ALL, "session": "conv-told"})
    assert not at.exception
    said = [t.value for t in at.text]
    assert "**question 0** [x](http://evil)" in said and "answer 1" in said  # as text, never Markdown


def test_graph_page_and_trace_graph_tab(start_ingest_server: Any, ui_env: Any, backend: str) -> None:
    srv, runs = _load(start_ingest_server, backend)
    ui_env(srv.http_url)
    at = open_page("graph", ALL)
    assert not at.exception and not at.error
    edges = at.dataframe[0].value
    rows = {(a, b): (n, e) for a, b, n, e in zip(edges["caller"], edges["callee"], edges["calls"], edges["errors"],
                                                  strict=True)}  # fmt: skip
    # two 2-step runs: 2 chat + 2 tool calls each, the second run's first tool call failed
    assert rows == {("support_agent", "gpt-4o-mini"): (4, 0), ("support_agent", "lookup"): (4, 1)}
    assert "built from the newest 4 of 4 matching runs" in texts(at)
    at = open_page("trace", {"trace_id": runs[1].trace_id})
    assert not at.exception
    assert ("sessions", "session=conv-1") in _links(at)  # the run's session, one click away
    assert "unexpected error" not in texts(at)
    graph_tab = [d.value for d in at.dataframe if "caller" in d.value.columns]
    assert len(graph_tab) == 1 and dict(zip(graph_tab[0]["callee"], graph_tab[0]["calls"], strict=True)) == {
        "gpt-4o-mini": 2, "lookup": 2}  # this run's own calls only


def test_saved_view_link_restores_its_filters(start_ingest_server: Any, ui_env: Any, backend: str) -> None:
    srv, _ = _load(start_ingest_server, backend)
    made = httpx.post(srv.http_url + "/api/views", json={
        "name": "u1's conversations", "page": "sessions", "since": "all", "params": {"user": "u1", "mode": "live"}})
    assert made.status_code == 201, made.text
    ui_env(srv.http_url)
    at = open_page("sessions", {"view": made.json()["view_id"]})
    assert not at.exception
    assert list(at.dataframe[0].value["session"]) == ["conv-1"]  # since=all and user=u1 restored
    assert at.query_params.get("user") in ("u1", ["u1"]) and "view" not in at.query_params
    assert ("sessions", f"view={made.json()['view_id']}") in _links(at)  # the sidebar lists the view


def test_saving_a_view_from_the_sidebar_stores_the_pages_url_state(start_ingest_server: Any, ui_env: Any, backend: str) -> None:
    srv, _ = _load(start_ingest_server, backend)
    ui_env(srv.http_url)
    at = open_page("sessions", {**ALL, "user": "u1", "agent": "support_agent"})
    assert not at.exception
    (name,) = [t for t in at.sidebar.text_input if t.label == "Save this view as"]
    name.input("support u1")
    (save,) = [b for b in at.sidebar.button if b.label == "Save view"]
    at = save.click().run()
    assert not at.exception
    (view,) = httpx.get(srv.http_url + "/api/views").json()["views"]
    assert (view["name"], view["page"], view["since"]) == ("support u1", "sessions", "all")
    assert view["params"]["user"] == "u1" and view["params"]["agent"] == "support_agent"
    assert "saved support u1" in texts(at)
    assert ("sessions", f"view={view['view_id']}") in _links(at)
