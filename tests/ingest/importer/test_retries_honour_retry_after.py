"""Overload answers (503/429) are retried, waiting what Retry-After says (backoff when it says
nothing); when the server stays overloaded the import stops with what is undelivered and how to
resume. Waits are recorded through the sleep hook instead of slept, so the tests stay fast."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
import uvicorn
from fastapi import FastAPI, Request, Response
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ingest.importer import ImportOptions, import_paths
from ingest.importer.send import parse_retry_after
from tests.ingest.importer.collector_files import FIXTURE, quiet_console, run_import


def test_real_server_overloaded_every_wait_is_its_retry_after(start_ingest_server) -> None:
    srv = start_ingest_server(queue_max_bytes=1, retry_after_s=2)  # every non-empty export: 503, Retry-After 2
    waits: list[float] = []
    summary = import_paths([FIXTURE], srv.http_url, options=ImportOptions(max_attempts=4), sleep=waits.append,
                           console=quiet_console())
    assert waits == [2.0, 2.0, 2.0]
    assert summary.exit_code == 2 and summary.spans_undelivered == 7 and summary.spans_accepted == 0
    assert "gave up sending 7 span(s)" in summary.fatal and "Re-run the same import" in summary.fatal
    assert "HTTP 503" in summary.fatal


class _FlakyOtlp:
    """A real HTTP server that answers the first exports 503 (Retry-After: 3), then 429 without
    Retry-After, then 200: the transient overload the real server cannot be made to show on cue."""

    def __init__(self, answers: list[tuple[int, dict[str, str]]]) -> None:
        self.answers = answers
        self.bodies: list[bytes] = []
        app = FastAPI()

        @app.post("/v1/traces")
        async def export(request: Request) -> Response:
            body = await request.body()
            if len(body) > 30:  # more than the gzip of an empty request: a real export
                self.bodies.append(body)
                if self.answers:
                    status, headers = self.answers.pop(0)
                    return Response(b"busy", status, headers, media_type="text/plain")
            return Response(ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf")

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)


@pytest.fixture
def flaky() -> Iterator[_FlakyOtlp]:
    date = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    stub = _FlakyOtlp([(503, {"Retry-After": "3"}), (429, {}), (503, {"Retry-After": date})])
    stub.thread.start()
    while not stub.server.started:
        stub.thread.join(0.02)
    yield stub
    stub.server.should_exit = True
    stub.thread.join(10)
    stub.sock.close()


def test_transient_overload_recovers_with_the_waits_asked_for(flaky: _FlakyOtlp) -> None:
    waits: list[float] = []
    summary = import_paths([FIXTURE], flaky.url, options=ImportOptions(max_wait_s=30), sleep=waits.append,
                           console=quiet_console())
    assert summary.ok and summary.requests == 1 and summary.spans_accepted == 7
    assert len(flaky.bodies) == 4 and len(set(flaky.bodies)) == 1  # the same request, resent
    assert waits[0] == 3.0  # Retry-After in seconds
    assert 1.0 <= waits[1] <= 1.5  # no Retry-After: backoff 0.5 s * 2^(attempt-1) (2nd attempt) + <= 0.5 s jitter
    assert waits[2] == 30.0  # an HTTP-date 60 s away, capped at max_wait_s


def test_retry_after_parsing() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0


def test_progress_messages_name_the_retry(start_ingest_server) -> None:
    srv = start_ingest_server(queue_max_bytes=1)
    summary, output = run_import(srv.http_url, [FIXTURE], max_attempts=2, max_retry_s=5)
    assert summary.exit_code == 2
    assert "attempt 1 failed (HTTP 503" in output

