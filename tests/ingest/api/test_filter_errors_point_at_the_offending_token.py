"""A filter the API cannot take is a 400 whose message names the problem, its line and column, and shows
the offending line with a caret under the token, on /api/runs, /api/spans and /api/search alike."""

from __future__ import annotations

import pytest

from tests.ingest.api.harness import BACKENDS, start_server, stop_server


@pytest.fixture(scope="module", params=BACKENDS)
def server(request, tmp_path_factory):
    """One server for the module (per store): every case is a refusal, nothing is written."""
    srv, stack, thread = start_server(tmp_path_factory.mktemp("filtererrors"), [], 10.0, request.param)
    yield srv
    stop_server(srv, stack, thread)

# (filter, line, column, words the message must contain)
CASES = [
    ('cost_usd > "cheap"', 1, 12, "number"),
    ('steps >', 1, 8, "ends too early"),
    ('agent = "a" and and', 1, 17, "unexpected"),
    ('agent ~ "a"', 1, 7, "unexpected character"),
    ('tool_name = "a" or\n  nosuchcolumn = 1', 2, 3, "unknown column 'nosuchcolumn'"),
    ('stream > true', 1, 10, "true/false"),
    ('tool_name = 12', 1, 13, "quote the value"),
    ('tool_name in ("a", 2)', 1, 20, "quote the value"),
    ('attributes["x"] in ("a", 2)', 1, 26, "mixed values"),
    ('attributes["x"] contains 5', 1, 26, "quoted string"),
    ('start_time > "yesterday"', 1, 14, "ISO 8601"),
    ('x = 1e999', 1, 5, "out of range"),
    ('(agent = "a"', 1, 13, "ends too early"),
    ('read_csv("/etc/passwd")', 1, 9, "unexpected '('"),
]


@pytest.mark.parametrize(("text", "line", "column", "words"), CASES)
def test_error_points_at_the_token(server, text, line, column, words):
    for path, extra in (("/api/runs", {}), ("/api/spans", {}), ("/api/search", {"q": "anything"})):
        r = server.get(path, filter=text, **extra)
        words_here = "unknown span column" if path != "/api/runs" and "unknown column" in words else words
        assert r.status_code == 400, (path, text, r.status_code, r.text)
        detail = r.json()["detail"]
        assert f"line {line}, column {column}" in detail, (path, detail)
        assert words_here in detail, (path, detail)
        shown, caret = detail.split("\n")[-2:]
        assert caret == " " * (column - 1) + "^", detail
        assert shown == text.splitlines()[line - 1], detail


def test_span_filter_names_the_run_column_it_cannot_use(server):
    r = server.get("/api/spans", filter='steps > 2')
    assert r.status_code == 400
    assert "a run column: use it on /api/runs" in r.json()["detail"]
