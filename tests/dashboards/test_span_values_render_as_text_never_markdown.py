"""Values that came from spans are shown as text on every page, never as Markdown or HTML.

The failure this covers: agent name and version, tool name, stop reason, `error.type`, status
messages, the step action and approval fields were rendered as Markdown on the Failures, Trace,
Compare and Approvals pages (and session ids, users and transcripts must not be on Sessions, nor
agent and tool names in the Agent graph's plotly labels), so whoever could send a span could put links and remote images in front
of a reviewer; the reviewer's browser fetched them (a tracking pixel that can carry data out).

Planted here in every such field of real spans sent over OTLP: a link, an image, raw HTML, emphasis,
a Streamlit colour directive and a bare URL, all pointing at a local beacon server. The real
dashboards are opened in a real chromium; no page may show a link or image to the beacon, render
the emphasis, or make the browser request anything from it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from ingest.alerts.rules import AlertRule
from tests.dashboards.browser import chromium, open_page, ui_server
from tests.ingest.api.content_runs import wait_indexed
from tests.ingest.api.otlp_runs import ns
from tracer import conventions as c


class Beacon:
    """An HTTP server on 127.0.0.1 that only records what asks it for anything."""

    def __init__(self) -> None:
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                hits.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def value(self, field: str) -> str:
        """A hostile value for `field` (under 200 characters, the approvals' field limit)."""
        at = f"http://127.0.0.1:{self.port}"
        return (f"{field} [lnk]({at}/l) ![i]({at}/i.png) <img src='{at}/h.png'> **bold** "
                f":red[red] {at}/u")


class _Api:
    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str, key: str | None = None, **params: Any) -> httpx.Response:
        return httpx.get(self.url + path, params=params, timeout=30)


@pytest.fixture
def beacon() -> Iterator[Beacon]:
    b = Beacon()
    yield b
    b.server.shutdown()


def _send_run(base: str, beacon: Beacon, start: datetime) -> str:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({c.SERVICE_NAME: "hostile-svc"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    t = provider.get_tracer("steplens.tests")
    v = beacon.value
    root = t.start_span(f"invoke_agent {v('agent')}", start_time=ns(start), attributes={
        c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: v("agent"),
        c.GEN_AI_AGENT_VERSION: v("version"), c.RUN_OK: False, c.RUN_STOP_REASON: v("stop"), c.RUN_STEPS: 1,
        c.GEN_AI_CONVERSATION_ID: v("conversation"), c.ENDUSER_ID: v("user"), c.RUN_TASK: v("task"),
        c.RUN_ANSWER: v("answer")})
    ctx = trace.set_span_in_context(root)
    step = t.start_span("step 0", context=ctx, start_time=ns(start + timedelta(milliseconds=1)), attributes={
        c.STEP_INDEX: 0, c.STEP_KIND: v("kind"), c.STEP_ACTION: v("action"), c.STEP_PARSE: v("parse")})
    sctx = trace.set_span_in_context(step)
    chat = t.start_span("chat gpt-4o-mini", context=sctx, kind=SpanKind.CLIENT,
                        start_time=ns(start + timedelta(milliseconds=2)), attributes={
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
        c.GEN_AI_USAGE_INPUT_TOKENS: 10, c.GEN_AI_USAGE_OUTPUT_TOKENS: 5})
    chat.end(end_time=ns(start + timedelta(milliseconds=5)))
    tool = t.start_span(f"execute_tool {v('tool')}", context=sctx, start_time=ns(start + timedelta(milliseconds=6)),
                        attributes={c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: v("tool"),
                                    c.ERROR_TYPE: v("etype"), c.TOOL_DECISION: v("decision")})
    tool.set_status(Status(StatusCode.ERROR, v("message")))
    tool.end(end_time=ns(start + timedelta(milliseconds=9)))
    step.end(end_time=ns(start + timedelta(milliseconds=10)))
    root.set_status(Status(StatusCode.ERROR, v("run-message")))
    root.end(end_time=ns(start + timedelta(milliseconds=12)))
    trace_id = format(root.get_span_context().trace_id, "032x")
    r = httpx.post(base + "/v1/traces", content=encode_spans(exporter.get_finished_spans()).SerializeToString(),
                   headers={"content-type": "application/x-protobuf"})
    assert r.status_code == 200, r.text
    return trace_id


def test_no_page_renders_a_span_value_as_markdown(start_ingest_server, beacon: Beacon, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    rule = AlertRule(name="steps", kind="threshold", metric="steps", threshold=0.5, min_samples=2,
                     window=timedelta(days=1), interval=timedelta(hours=1))
    srv = start_ingest_server(grpc_port=0, alerts=[rule])
    base = srv.http_url
    now = datetime.now(UTC) - timedelta(minutes=5)
    traces = [_send_run(base, beacon, now + timedelta(seconds=i)) for i in range(2)]
    v = beacon.value
    pending = httpx.post(base + "/api/approvals", json={
        "tool": v("approval-tool"), "agent": v("approval-agent"), "agent_version": v("approval-version"),
        "summary": v("summary"), "trace_id": traces[0], "arguments": {"amount": v("argument")}})
    assert pending.status_code == 201, pending.text
    decided = httpx.post(base + "/api/approvals", json={"tool": v("decided-tool"), "agent": v("decided-agent")})
    rejected = httpx.post(f"{base}/api/approvals/{decided.json()['approval_id']}/reject",
                          json={"reason": v("reason"), "by": v("by")})
    assert rejected.status_code == 200, rejected.text
    assert srv.store.wait_loaded(30)
    assert httpx.post(base + "/api/alerts/check").json()["firing"], "the alert on the hostile agent fires"
    wait_indexed(_Api(base))  # the Search page shows the hostile status messages' snippets

    pages = [
        ("failures?since=all", "Failures"), (f"trace?trace_id={traces[0]}", "Trace"),
        (f"compare?a={traces[0]}&b={traces[1]}", "Compare runs"), ("approvals?status=all", "Approvals"),
        ("alerts", "Alerts"), ("regressions?comparison=drift&since=all", "Regressions"),
        ("runs?since=all", "Runs"), ("?since=all", "Overview"), ("search?since=all&q=message", "Search"),
        ("sessions?since=all", "Sessions"), (f"sessions?since=all&session={quote(v('conversation'), safe='')}", "Sessions"),
        ("graph?since=all", "Agent graph"),
    ]
    shown_literally = set()
    with ui_server(base, tmp_path) as ui, chromium(tmp_path) as driver:
        for page, title in pages:
            open_page(driver, f"{ui}/{page}", title)
            for expander in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stExpander"] summary'):
                if expander.get_attribute("aria-expanded") != "true":
                    expander.click()
            needle = f"127.0.0.1:{beacon.port}"
            links = [a.get_attribute("href") for a in driver.find_elements(By.TAG_NAME, "a")]
            assert not [h for h in links if h and needle in h], f"{page}: a span value became a link"
            images = [i.get_attribute("src") for i in driver.find_elements(By.TAG_NAME, "img")]
            assert not [s for s in images if s and needle in s], f"{page}: a span value became an image"
            emphasis = driver.find_elements(By.XPATH, "//strong[text()='bold'] | //em[text()='bold'] | //b[text()='bold']")
            assert not emphasis, f"{page}: a span value was rendered as emphasis"
            coloured = driver.find_elements(By.XPATH, "//span[text()='red' and contains(@class, 'color')]")
            assert not coloured, f"{page}: a span value became a colour directive"
            if "**bold**" in driver.find_element(By.TAG_NAME, "body").text:
                shown_literally.add(title)
    assert beacon.hits == [], f"the browser fetched {beacon.hits} from a span value"
    # the values are there, as the text they are (not merely dropped)
    assert {"Failures", "Trace", "Compare runs", "Approvals", "Alerts", "Sessions", "Search"} <= shown_literally, shown_literally
